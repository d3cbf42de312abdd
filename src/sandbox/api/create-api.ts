import { createHash } from 'node:crypto';
import express, { type ErrorRequestHandler, type Request, type Response } from 'express';
import type { Logger } from 'pino';
import { request as fetchUrl, type Dispatcher } from 'undici';
import { synthesizeWav } from '../audio/synthesize-wav.js';
import type { AudioFiles } from '../audio/audio-files.js';
import type { DeliveryEngine } from '../delivery/delivery-engine.js';
import type { ApiKey, KeyStore } from './keys.js';
import { LIMITS, type Endpoint, type createRateLimiter } from './rate-limit.js';
import type { createRequestLog } from './request-log.js';
import {
  batchRequest,
  eventRequest,
  firstProblem,
  ttsRequest,
  voiceConvertRequest,
} from './schemas.js';

export interface SandboxApiDeps {
  readonly keys: KeyStore;
  readonly admit: ReturnType<typeof createRateLimiter>;
  readonly requests: ReturnType<typeof createRequestLog>;
  readonly engine: DeliveryEngine;
  readonly audio: AudioFiles;
  readonly cdnOrigin: string;
  /** Trusts the CDN's own certificate, for voice conversion's fetch. */
  readonly cdnDispatcher: Dispatcher;
  readonly rateWindowMs: number;
  readonly logger: Logger;
}

export const VOICES = [
  { id: 'alloy', name: 'Alloy' },
  { id: 'ember', name: 'Ember' },
  { id: 'river', name: 'River' },
  { id: 'sage', name: 'Sage' },
] as const;

class ApiError extends Error {
  constructor(
    readonly status: number,
    detail: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(detail);
  }
}

const sendWav = (res: Response, wav: Buffer) => {
  res.status(200).type('audio/wav').send(wav);
};

/** The provider's API (spec §4) as the sandbox plays it, and the sandbox's control endpoints. */
export function createSandboxApi(deps: SandboxApiDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(express.json({ limit: '16mb' }));

  /** Key, then limit; every API request is logged with the status it got. */
  const guarded =
    (endpoint: Endpoint, handler: (req: Request, res: Response, key: ApiKey) => Promise<void>) =>
    async (req: Request, res: Response) => {
      const at = Date.now();
      let keyId: string | null = null;
      res.once('finish', () => {
        const retryAfter = res.getHeader('retry-after');
        void deps.requests.add({
          key_id: keyId,
          endpoint: req.path,
          at,
          done: Date.now(),
          status: res.statusCode,
          ...(retryAfter === undefined ? {} : { retry_after: Number(retryAfter) }),
        });
      });
      const token = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
      if (token === undefined)
        throw new ApiError(401, 'missing API key: send Authorization: Bearer <token>');
      const key = await deps.keys.byToken(token);
      if (key === undefined) throw new ApiError(401, 'unknown API key');
      keyId = key.id;
      if (key.revoked_at !== undefined) throw new ApiError(401, `API key ${key.id} was revoked`);
      const admission = await deps.admit(key.id, endpoint);
      if (!admission.admitted) {
        const seconds = Math.ceil(admission.waitMs / 1000);
        throw new ApiError(
          429,
          `rate limit of ${LIMITS[endpoint]} requests per ${deps.rateWindowMs / 1000} s exceeded for ${endpoint} with key ${key.id}; retry after ${seconds} s`,
          { 'Retry-After': String(seconds) },
        );
      }
      await handler(req, res, key);
    };

  app.post(
    '/v1/tts',
    guarded('tts', async (req, res) => {
      const body = ttsRequest.safeParse(req.body);
      if (!body.success) throw new ApiError(400, firstProblem(body.error));
      sendWav(res, synthesizeWav(body.data.text, body.data.voice));
      await Promise.resolve();
    }),
  );

  app.post(
    '/v1/voice-convert',
    guarded('voice-convert', async (req, res) => {
      const body = voiceConvertRequest.safeParse(req.body);
      if (!body.success) throw new ApiError(400, firstProblem(body.error));
      if (!body.data.audio_url.startsWith(`${deps.cdnOrigin}/audio/`)) {
        throw new ApiError(400, `audio_url must be on the sandbox CDN, ${deps.cdnOrigin}/audio/…`);
      }
      const source = await fetchUrl(body.data.audio_url, { dispatcher: deps.cdnDispatcher });
      if (source.statusCode !== 200) {
        await source.body.dump();
        throw new ApiError(400, `audio_url answered ${source.statusCode}`);
      }
      const bytes = Buffer.from(await source.body.arrayBuffer());
      // The "converted" audio: deterministic for the same source and voice, in the new voice.
      sendWav(
        res,
        synthesizeWav(createHash('sha256').update(bytes).digest('hex'), body.data.voice),
      );
    }),
  );

  app.get(
    '/voices',
    guarded('voices', async (_req, res) => {
      res.json({ voices: VOICES });
      await Promise.resolve();
    }),
  );

  app.post(
    '/v1/tts/batch',
    guarded('tts', async (req, res) => {
      const body = batchRequest.safeParse(req.body);
      if (!body.success) throw new ApiError(400, firstProblem(body.error));
      const batchId = deps.audio.newBatchId();
      const items = body.data.items.map((item, index) => ({
        ...item,
        id: item.id ?? `${batchId}_${index}`,
      }));
      if (new Set(items.map((item) => item.id)).size !== items.length) {
        throw new ApiError(400, 'items: ids must be unique within a batch');
      }
      const failing = new Set(body.data.fail ?? []);
      const deliveries = [];
      for (const [index, item] of items.entries()) {
        if (failing.has(item.id)) {
          deliveries.push({
            event: 'audio.failed',
            data: {
              id: item.id,
              kind: 'tts',
              voice: item.voice,
              reason: 'synthesis failed (sandbox fault injection)',
            },
          });
          continue;
        }
        const audioUrl = await deps.audio.put(batchId, index, synthesizeWav(item.text, item.voice));
        deliveries.push({
          event: 'audio.ready',
          data: {
            id: item.id,
            kind: 'tts',
            audio_url: audioUrl,
            voice: item.voice,
            created_at: new Date().toISOString(),
          },
        });
      }
      await deps.engine.send(deliveries);
      res.status(202).json({ batch_id: batchId, items: items.map((item) => ({ id: item.id })) });
    }),
  );

  // Control: sandbox only, no key.
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

  app.use((_req, res) => {
    res.status(404).json({ detail: 'not found' });
  });
  const errors: ErrorRequestHandler = (error: unknown, _req, res, _next) => {
    if (error instanceof ApiError) {
      res.set(error.headers).status(error.status).json({ detail: error.message });
      return;
    }
    const status = (error as { status?: unknown }).status;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      res.status(status).json({ detail: error instanceof Error ? error.message : 'bad request' });
      return;
    }
    deps.logger.error({ err: error }, 'sandbox API error');
    res.status(500).json({ detail: 'internal error' });
  };
  app.use(errors);
  return app;
}
