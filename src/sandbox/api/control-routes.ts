import { Router } from 'express';
import { ApiError } from './api-error.js';
import type { SandboxApiDeps } from './sandbox-api-deps.js';
import { eventRequest, firstProblem } from './schemas.js';

/** The sandbox's own endpoints (no key): keys, events with faults, the logs, health. */
export function controlRoutes(deps: SandboxApiDeps): Router {
  const app = Router();
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });

  app.post('/sandbox/keys', async (_req, res) => {
    const key = await deps.keys.create();
    res.status(201).json({ id: key.id, token: key.token });
  });

  app.post('/sandbox/keys/:id/revoke', async (req, res) => {
    const id = req.params.id;
    const key = await deps.keys.byId(id);
    if (key === undefined) throw new ApiError(404, `no API key ${id}`);
    if (await deps.keys.revoke(id)) {
      await deps.engine.send([{ event: 'key.revoked', data: { id } }]);
      deps.logger.info({ keyId: id }, 'API key revoked; key.revoked delivery queued');
    }
    res.json({ id, revoked: true });
  });

  app.post('/sandbox/events', async (req, res) => {
    const body = eventRequest.safeParse(req.body);
    if (!body.success) throw new ApiError(400, firstProblem(body.error));
    const [id] = await deps.engine.send([
      { event: body.data.event, data: body.data.data, faults: body.data.faults ?? [] },
    ]);
    res.status(202).json({ id });
  });

  app.get('/sandbox/deliveries', async (req, res) => {
    const wanted = typeof req.query.id === 'string' ? req.query.id : undefined;
    const dataId = typeof req.query.data_id === 'string' ? req.query.data_id : undefined;
    const all = await deps.engine.records.list();
    res.json(
      all
        .filter(
          (r) =>
            (wanted === undefined || r.id === wanted) &&
            (dataId === undefined || r.data_id === dataId),
        )
        .map(({ body: _body, created_at: _created, ...shown }) => shown),
    );
  });

  app.get('/sandbox/requests', async (_req, res) => {
    res.json(await deps.requests.list());
  });

  app.get('/sandbox/cdn-hits', (_req, res) => {
    res.json(Object.fromEntries(deps.cdnHits));
  });

  return app;
}
