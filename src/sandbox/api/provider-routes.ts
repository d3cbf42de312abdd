import { createHash } from 'node:crypto';
import { Router, type Request, type Response } from 'express';
import { request as fetchUrl } from 'undici';
import { synthesizeWav } from '../audio/synthesize-wav.js';
import { ApiError } from './api-error.js';
import type { SandboxApiDeps } from './sandbox-api-deps.js';
import type { ApiKey } from './keys.js';
import { SPEC_LIMITS, type Endpoint } from '../../provider-spec/rate-limits.js';
import { batchRequest, firstProblem, ttsRequest, voiceConvertRequest, VOICES } from './schemas.js';

const sendWav = (res: Response, wav: Buffer) => {
  res.status(200).type('audio/wav').send(wav);
};

/** The provider's endpoints (docs/provider.md): key, limit, request log, then the work. */
export function providerRoutes(deps: SandboxApiDeps): Router {
  const app = Router();
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
          `rate limit of ${SPEC_LIMITS[endpoint]} requests per ${deps.rateWindowMs / 1000} s exceeded for ${endpoint} with key ${key.id}; retry after ${seconds} s`,
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

  return app;
}
