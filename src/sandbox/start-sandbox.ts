import { mkdir, writeFile } from 'node:fs/promises';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import type { Logger } from 'pino';
import { Agent } from 'undici';
import { ListenError, listenProblem } from '../http-server/serve.js';
import { createWorkerRedis, readyOrFail, redisTarget } from '../redis/connections.js';
import { watchRedis } from '../redis/watch-redis.js';
import { createKeyStore, type ApiKey, type KeyStore } from './api/keys.js';
import { createSandboxApi } from './api/create-api.js';
import { createRateLimiter } from './api/rate-limit.js';
import { createRequestLog } from './api/request-log.js';
import { createAudioFiles } from './audio/audio-files.js';
import { cdnCertificate } from './cdn/certificate.js';
import { SAMPLE_FILE, startCdn, type CdnServer } from './cdn/cdn-server.js';
import { synthesizeWav } from './audio/synthesize-wav.js';
import { createDeliveryEngine } from './delivery/delivery-engine.js';
import { originOf, type SandboxConfig } from './sandbox-settings.js';

/** What `<dir>/sandbox.json` holds and the sandbox prints (docs/sandbox.md). */
export interface SandboxInfo {
  readonly api: string;
  readonly cdn: string;
  readonly ca: string;
  readonly key: { readonly id: string; readonly token: string };
}

export interface RunningSandbox {
  readonly info: SandboxInfo;
  close(): Promise<void>;
}

/** How long the sandbox waits for Redis at start before it gives up (exit 1). */
const REDIS_START_WAIT_MS = 5_000;

/** The ready key: the same one across restarts while it is not revoked. */
async function readyKey(
  redis: ReturnType<typeof createWorkerRedis>,
  keys: KeyStore,
  prefix: string,
): Promise<ApiKey> {
  const pointer = `${prefix}:ready-key`;
  const id = await redis.get(pointer);
  const kept = id === null ? undefined : await keys.byId(id);
  if (kept !== undefined && kept.revoked_at === undefined) return kept;
  const key = await keys.create();
  await redis.set(pointer, key.id);
  return key;
}

/**
 * The provider's stand-in: API (plain HTTP), CDN (HTTPS, self-signed), delivery engine, all
 * state in Redis under SANDBOX_PREFIX, so pending deliveries survive a restart.
 */
export async function startSandbox(config: SandboxConfig, logger: Logger): Promise<RunningSandbox> {
  // What is open so far, closed in reverse if a later step fails: a sandbox that cannot start
  // must exit, not linger on its Redis connection and half its servers.
  const opened: (() => Promise<unknown>)[] = [];
  // The API's routes come once Redis is there, but its port is taken first, with the CDN's.
  // Until then every request is answered 503 at once: a server with no request listener never
  // answers, so a check polling /healthz while the sandbox starts (the README's wait_for) would
  // wait for ever on a request that arrives in between.
  let handle: RequestListener = (_req, res) => {
    res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' });
    res.end(JSON.stringify({ detail: 'the sandbox is starting' }));
  };
  const server = createServer((req, res) => {
    handle(req, res);
  });
  const closeAll = async () => {
    // The API first: no request meets a closed engine or Redis.
    if (server.listening)
      await new Promise<void>((resolveClose) => {
        server.close(() => {
          resolveClose();
        });
        server.closeAllConnections();
      });
    for (const close of opened.splice(0).reverse()) await close().catch(() => undefined);
  };
  try {
    await mkdir(config.dir, { recursive: true });
    const certificate = await cdnCertificate(config.dir, [config.publicHost]);
    const audioDir = join(config.dir, 'audio');
    await mkdir(audioDir, { recursive: true });
    await writeFile(join(audioDir, SAMPLE_FILE), synthesizeWav('sample', 'alloy'));
    const cdn = await listenBoth(config, server, audioDir, certificate, opened);
    const redis = createWorkerRedis(config);
    opened.push(async () => {
      // quit() waits in the offline queue of a connection that never came up: for ever.
      if (redis.status === 'ready')
        await redis.quit().catch(() => {
          redis.disconnect();
        });
      else redis.disconnect();
    });
    // Nothing works without Redis (keys, deliveries, limits): say so in one line and stop,
    // rather than wait (and log) for ever for a Redis that may never come.
    await readyOrFail(redis, REDIS_START_WAIT_MS, redisTarget(config));
    // From here on an outage is one line when it starts and one when it ends.
    const connection = watchRedis(redis, logger, 'sandbox', redisTarget(config));
    connection.up();
    const cdnOrigin = originOf('https', config.publicHost, cdn.port);
    const keys = createKeyStore(redis, config.prefix);
    const engine = createDeliveryEngine({
      redis,
      prefix: config.prefix,
      webhookUrl: config.webhookUrl,
      secrets: { current: config.secret, rotated: config.rotatedSecret },
      timeScale: config.timeScale,
      deliveryTimeoutMs: config.deliveryTimeoutMs,
      logger,
      connection,
    });
    opened.push(() => engine.close());
    const cdnDispatcher = new Agent({ connect: { ca: certificate.cert } });
    opened.push(() => cdnDispatcher.close());
    const app = createSandboxApi({
      keys,
      admit: createRateLimiter(redis, config.prefix, config.rateWindowMs),
      requests: createRequestLog(redis, config.prefix),
      engine,
      audio: createAudioFiles(audioDir, cdnOrigin),
      cdnOrigin,
      cdnHits: cdn.hits,
      cdnDispatcher,
      rateWindowMs: config.rateWindowMs,
      logger,
    });
    const key = await readyKey(redis, keys, config.prefix);
    const info: SandboxInfo = {
      api: originOf('http', config.publicHost, (server.address() as AddressInfo).port),
      cdn: cdnOrigin,
      ca: resolve(certificate.caPath),
      key: { id: key.id, token: key.token },
    };
    await writeFile(join(config.dir, 'sandbox.json'), `${JSON.stringify(info, null, 2)}\n`);
    // Ready only now: a /healthz that answers 200 means sandbox.json holds this start's key.
    handle = app;
    return { info, close: closeAll };
  } catch (error: unknown) {
    await closeAll();
    throw error;
  }
}

/**
 * Takes the CDN's port and the API's, both before anything else starts (Redis, the engine): a
 * port taken (a second sandbox, another service) is then one line naming each port taken, by
 * its flag and variable, and nothing else is printed or left open (the CDN, when bound, is
 * added to `opened`; the caller closes the API's server).
 */
async function listenBoth(
  config: SandboxConfig,
  api: Server,
  audioDir: string,
  certificate: Parameters<typeof startCdn>[1],
  opened: (() => Promise<unknown>)[],
): Promise<CdnServer> {
  const [cdn, listened] = await Promise.allSettled([
    startCdn(audioDir, certificate, config.host, config.cdnPort),
    new Promise<void>((resolveListen, reject) => {
      api.once('error', reject);
      api.listen(config.port, config.host, () => {
        api.off('error', reject);
        resolveListen();
      });
    }),
  ]);
  if (cdn.status === 'fulfilled') opened.push(() => cdn.value.close());
  const problem = (result: PromiseSettledResult<unknown>, port: number, name: string) =>
    result.status === 'rejected'
      ? [listenProblem(errnoOf(result.reason), port, config.host, name, 'SANDBOX_HOST (--host)')]
      : [];
  // A host that is not this machine's fails both alike: said once.
  const problems = new Set([
    ...problem(listened, config.port, 'SANDBOX_PORT (--port)'),
    ...problem(cdn, config.cdnPort, 'SANDBOX_CDN_PORT (--cdn-port)'),
  ]);
  if (cdn.status === 'rejected' || problems.size > 0)
    throw new ListenError([...problems].join('; '));
  return cdn.value;
}

const errnoOf = (reason: unknown): NodeJS.ErrnoException =>
  reason instanceof Error ? reason : new Error(String(reason));
