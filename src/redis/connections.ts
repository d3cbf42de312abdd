import { Redis } from 'ioredis';
import type { Config } from '../config.js';
import { redactUrl } from './redact-url.js';

/** What every connection needs to know of the configuration. */
export type RedisConfig = Pick<Config, 'redisUrl'>;

/** Where the connections go, fit for a log line (no password). */
export function redisTarget(config: RedisConfig): string {
  return redactUrl(config.redisUrl);
}

/** Keep reconnecting for ever, at most every 2 s: a process must recover when Redis returns. */
const reconnect = (times: number) => Math.min(times * 100, 2_000);

/**
 * How long the web side waits for one Redis command. A delivery not stored by then is answered
 * 503 (the sender retries); the route applies the same bound to the whole store, so commands
 * queued behind a stalled pipeline cannot stretch it (webhook-route.ts).
 */
export const WEB_COMMAND_TIMEOUT_MS = 1_000;

/**
 * The web process's connection: it fails fast. With no offline queue and one retry, a request
 * made while Redis is away errors at once and becomes a 503, never a hang; `commandTimeout` bounds
 * a Redis that accepts the connection but does not answer. Auto-pipelining sends the adds of
 * concurrent requests in one write: it halves Redis's CPU per delivery (measured 44–53 against
 * 80–96 µs, docs/performance.md) at the same throughput.
 */
export function createWebRedis(config: RedisConfig): Redis {
  return new Redis(config.redisUrl, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: WEB_COMMAND_TIMEOUT_MS,
    connectTimeout: WEB_COMMAND_TIMEOUT_MS,
    enableAutoPipelining: true,
    retryStrategy: reconnect,
  });
}

/**
 * The workers' connection (BullMQ duplicates it for its blocking reads). Workers wait out an
 * outage rather than fail: BullMQ requires `maxRetriesPerRequest: null`.
 */
export function createWorkerRedis(config: RedisConfig): Redis {
  return new Redis(config.redisUrl, { maxRetriesPerRequest: null, retryStrategy: reconnect });
}

/**
 * Drops a connection that may already have ended. ioredis's disconnect() arms a 2 s timer that
 * only the socket's `close` event clears; after a refused connection the socket closed long ago,
 * so the timer kept a finished CLI (and Jest) alive for 2 s more.
 */
export function dropConnection(redis: Redis): void {
  if (redis.status !== 'end') redis.disconnect();
}

/**
 * The CLI's connection: it gives up at once, so an unreachable Redis is one clear line, not a
 * hang. Connect it with `connect()`; failures name the redacted target.
 */
export function createCliRedis(config: RedisConfig): Redis {
  return new Redis(config.redisUrl, {
    lazyConnect: true,
    connectTimeout: 3_000,
    maxRetriesPerRequest: 1,
    retryStrategy: () => null,
  });
}
