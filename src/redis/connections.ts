import { Cluster, Redis } from 'ioredis';
import type { RedisSettings } from '../config/redis-settings.js';

/** One Redis, a primary found through Sentinels, or a Cluster: every role speaks to either. */
export type RedisConnection = Redis | Cluster;
export type Topology = 'single' | 'sentinel' | 'cluster';

/** What every connection needs to know of the configuration (REDIS_PASSWORD only when set). */
export type RedisConfig = Pick<
  RedisSettings,
  'redisUrl' | 'redisSentinels' | 'redisSentinelName' | 'redisClusterNodes'
> &
  Partial<Pick<RedisSettings, 'redisPassword'>>;

export function topologyOf(config: RedisConfig): Topology {
  if (config.redisClusterNodes.length > 0) return 'cluster';
  return config.redisSentinels.length > 0 ? 'sentinel' : 'single';
}

const list = (nodes: readonly { host: string; port: number }[]) =>
  nodes.map((node) => `${node.host}:${node.port}`).join(',');

/** Where the connections go, fit for a log line (no password). */
export function redisTarget(config: RedisConfig): string {
  switch (topologyOf(config)) {
    case 'cluster':
      return `cluster ${list(config.redisClusterNodes)}`;
    case 'sentinel':
      return `sentinel ${config.redisSentinelName} via ${list(config.redisSentinels)}`;
    default:
      return redactUrl(config.redisUrl);
  }
}

/** Keep reconnecting for ever, at most every 2 s: a process must recover when Redis returns. */
const reconnect = (times: number) => Math.min(times * 100, 2_000);

/** The knobs the roles set; everything else is ioredis's default. */
interface Knobs {
  readonly maxRetriesPerRequest: number | null;
  readonly retryStrategy: (times: number) => number | null;
  readonly enableOfflineQueue?: boolean;
  readonly enableAutoPipelining?: boolean;
  readonly lazyConnect?: boolean;
  readonly commandTimeout?: number;
  readonly connectTimeout?: number;
}

/** What REDIS_URL contributes when Sentinels or a Cluster name the servers: credentials, TLS. */
function fromUrl(raw: string) {
  const url = new URL(raw);
  const db = Number(url.pathname.slice(1) || 0);
  return {
    ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
    ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
    ...(db > 0 ? { db } : {}),
    ...(url.protocol === 'rediss:' ? { tls: {} } : {}),
  };
}

/**
 * REDIS_PASSWORD, when set: config refuses it beside a password in REDIS_URL, so it never
 * competes with the URL's (for a URL, ioredis lets the URL's win).
 */
const password = (config: RedisConfig) =>
  config.redisPassword === undefined ? {} : { password: config.redisPassword };

/** The one place a connection is made, for every topology and role. */
function connect(config: RedisConfig, knobs: Knobs): RedisConnection {
  const { enableOfflineQueue, enableAutoPipelining, lazyConnect, retryStrategy, ...perNode } =
    knobs;
  const common = {
    ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue }),
    ...(enableAutoPipelining === undefined ? {} : { enableAutoPipelining }),
    ...(lazyConnect === undefined ? {} : { lazyConnect }),
  };
  switch (topologyOf(config)) {
    case 'cluster':
      return new Cluster([...config.redisClusterNodes], {
        ...common,
        clusterRetryStrategy: retryStrategy,
        redisOptions: { ...fromUrl(config.redisUrl), ...password(config), ...perNode },
      });
    case 'sentinel':
      return new Redis({
        sentinels: [...config.redisSentinels],
        name: config.redisSentinelName,
        ...fromUrl(config.redisUrl),
        ...password(config),
        ...common,
        ...perNode,
        retryStrategy,
      });
    default:
      return new Redis(config.redisUrl, {
        ...common,
        ...password(config),
        ...perNode,
        retryStrategy,
      });
  }
}

/** A second connection like `redis` (for a subscriber): the same topology and options. */
export function duplicateConnection(redis: RedisConnection): RedisConnection {
  return redis instanceof Cluster ? redis.duplicate() : redis.duplicate();
}

/**
 * How long the web side waits for one Redis command. A delivery not stored by then is answered
 * 503 (the sender retries); the enqueue applies the same bound to the whole of a delivery's write, so
 * commands queued behind a stalled pipeline cannot stretch it (receiver/enqueue-delivery.ts).
 */
export const WEB_COMMAND_TIMEOUT_MS = 1_000;

/** The web side's bound on one enqueue: longer by the WAIT timeout when replicas must acknowledge. */
export function webStoreDeadlineMs(
  config: Pick<RedisSettings, 'redisWaitReplicas' | 'redisWaitTimeoutMs'>,
): number {
  return WEB_COMMAND_TIMEOUT_MS + (config.redisWaitReplicas > 0 ? config.redisWaitTimeoutMs : 0);
}

/**
 * The web process's connection: it fails fast. With no offline queue and one retry, a request
 * made while Redis is away errors at once and becomes a 503, never a hang; `commandTimeout` bounds
 * a Redis that accepts the connection but does not answer (longer by the WAIT timeout, when
 * replicas must acknowledge). Auto-pipelining sends the adds of concurrent requests in one
 * write, which spends less of Redis's CPU per delivery at the same throughput
 * (docs/performance-history.md, "Figures behind the code").
 */
export function createWebRedis(
  config: RedisConfig & Pick<RedisSettings, 'redisWaitReplicas' | 'redisWaitTimeoutMs'>,
): RedisConnection {
  return connect(config, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: webStoreDeadlineMs(config),
    connectTimeout: WEB_COMMAND_TIMEOUT_MS,
    enableAutoPipelining: true,
    retryStrategy: reconnect,
  });
}

/**
 * The workers' connection (BullMQ duplicates it for its blocking reads); the sandbox and the
 * provider client use the same kind. They wait out an outage rather than fail: BullMQ requires
 * `maxRetriesPerRequest: null`.
 */
export function createWorkerRedis(config: RedisConfig): RedisConnection {
  return connect(config, { maxRetriesPerRequest: null, retryStrategy: reconnect });
}

/** Resolves once the connection is ready, or after `ms` whatever its state (never rejects). */
export function readyWithin(redis: RedisConnection, ms: number): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      redis.off('ready', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    redis.once('ready', done);
  });
}

/** Redis did not become reachable in time: the message names the target and the cause. */
export class RedisUnreachableError extends Error {
  override name = 'RedisUnreachableError';
}

/**
 * Resolves once the connection is ready; rejects with RedisUnreachableError after `ms`, naming
 * `target` and the last connection error seen. For processes that cannot do anything useful
 * without Redis at start (the sandbox): one clear line and an exit beat waiting for ever.
 */
export async function readyOrFail(
  redis: RedisConnection,
  ms: number,
  target: string,
): Promise<void> {
  let cause: unknown;
  const remember = (error: unknown) => (cause = error);
  redis.on('error', remember);
  await readyWithin(redis, ms);
  // On failure the listener stays until the caller drops the connection: an 'error' with no
  // listener would be printed by ioredis as "Unhandled error event".
  if (redis.status === 'ready') redis.off('error', remember);
  else {
    const reason = cause instanceof Error ? cause.message : 'no answer';
    throw new RedisUnreachableError(`cannot reach Redis at ${target} within ${ms} ms: ${reason}`);
  }
}

/**
 * Drops a connection that may already have ended. ioredis's disconnect() arms a 2 s timer that
 * only the socket's `close` event clears; after a refused connection the socket closed long ago,
 * so that timer would keep a finished CLI (and Jest) alive.
 */
export function dropConnection(redis: RedisConnection): void {
  if (redis.status !== 'end') redis.disconnect();
}

/**
 * The CLI's connection: it gives up at once, so an unreachable Redis is one clear line, not a
 * hang. Connect it with `connect()`; failures name the redacted target.
 */
export function createCliRedis(config: RedisConfig): RedisConnection {
  return connect(config, {
    lazyConnect: true,
    connectTimeout: 3_000,
    maxRetriesPerRequest: 1,
    retryStrategy: () => null,
  });
}

/** A Redis URL fit for a log line or an error message: the password never is. */
export function redactUrl(raw: string): string {
  try {
    const url = new URL(raw);
    if (url.password) url.password = '***';
    return url.href;
  } catch {
    return '(unparseable URL)';
  }
}
