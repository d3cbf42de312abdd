import express from 'express';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { notFound } from '../http-server/error-handler.js';
import { serve, type RunningServer } from '../http-server/serve.js';
import type { Liveness } from './liveness.js';

/**
 * A ROLE=worker process's own small HTTP server (WORKER_HEALTH_PORT): /healthz for Kubernetes'
 * liveness probe (503 with the reason when the worker is wedged, see liveness.ts) and /metrics.
 */
export function serveWorkerHealth(
  deps: { liveness: Liveness; registry: Registry; logger: Logger },
  port: number,
  host: string,
): Promise<RunningServer> {
  const app = express();
  app.disable('x-powered-by');
  let wedged: string | undefined;
  app.get('/healthz', async (_req, res) => {
    const verdict = await deps.liveness.check();
    const reason = verdict.ok ? undefined : verdict.reason;
    // Logged once per change, not per probe.
    if (reason !== undefined && wedged === undefined)
      deps.logger.error({ reason }, 'worker wedged: its liveness probe now fails');
    if (reason === undefined && wedged !== undefined)
      deps.logger.info('worker makes progress again');
    wedged = reason;
    if (verdict.ok) res.json({ status: 'ok' });
    else res.status(503).json({ detail: verdict.reason });
  });
  app.get('/metrics', async (_req, res) => {
    res.type(deps.registry.contentType).send(await deps.registry.metrics());
  });
  app.use(notFound);
  return serve(app, port, host);
}
