import { randomBytes } from 'node:crypto';
import type { RedisConnection } from '../redis/connections.js';
import type { Endpoint } from '../spec/rate-limits.js';

/**
 * The shared limiter: an exact sliding log per (key, endpoint), one sorted-set entry per request
 * admitted in the last window, scored by Redis's own clock (TIME) so the processes' clocks do not
 * matter. One script, atomic: honour a pause (a 429 seen by any process), trim, count, then admit
 * or say how long until the oldest entry leaves. Both keys carry the API key's id as hash tag,
 * so on Redis Cluster they share a slot. Answer: -1 admitted, else the wait in ms.
 */
const ADMIT = `
local paused = redis.call('PTTL', KEYS[2])
if paused > 0 then return paused end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], window)
  return -1
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return math.max(1, tonumber(oldest[2]) + window - now)`;

/**
 * Re-stamps an admitted request with the time its answer arrived. The provider counted the
 * request when it arrived, which was before it answered; so a slot reused a full window after
 * the answer is a full window after the provider's count too, whatever the latencies (a cold
 * process's first request took tens of ms longer to arrive than later ones, which a fixed margin
 * of 40 ms did not cover: one 429 in 150).
 */
const SETTLE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], 'XX', now, ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`;

/** Extends a pause, never shortens it: two 429s keep the later Retry-After. */
const PAUSE = `
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
end
return 1`;

export interface Limiter {
  /** Admits one request now (its log entry's name), or answers how long to wait (ms). */
  tryAdmit(keyId: string, endpoint: Endpoint): Promise<{ readonly entry: string } | number>;
  /** The admitted request's answer arrived (or it failed): its slot counts from now. */
  settle(keyId: string, endpoint: Endpoint, entry: string): Promise<void>;
  /** Every process sharing the Redis holds off this key and endpoint for `ms`. */
  pause(keyId: string, endpoint: Endpoint, ms: number): Promise<void>;
}

export function createLimiter(
  redis: RedisConnection,
  prefix: string,
  limits: Readonly<Record<Endpoint, number>>,
  windowMs: number,
): Limiter {
  const keys = (keyId: string, endpoint: Endpoint) => [
    `${prefix}:provider:{${keyId}}:${endpoint}:log`,
    `${prefix}:provider:{${keyId}}:${endpoint}:pause`,
  ];
  return {
    async tryAdmit(keyId, endpoint) {
      const member = `${Date.now()}-${randomBytes(6).toString('hex')}`;
      const answer = Number(
        await redis.eval(ADMIT, 2, ...keys(keyId, endpoint), windowMs, limits[endpoint], member),
      );
      return answer < 0 ? { entry: member } : answer;
    },
    async settle(keyId, endpoint, entry) {
      const [log] = keys(keyId, endpoint);
      await redis.eval(SETTLE, 1, log ?? '', entry, windowMs);
    },
    async pause(keyId, endpoint, ms) {
      const [, pauseKey] = keys(keyId, endpoint);
      await redis.eval(PAUSE, 1, pauseKey ?? '', Math.max(1, Math.ceil(ms)));
    },
  };
}
