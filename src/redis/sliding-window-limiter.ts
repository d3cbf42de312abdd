import { randomBytes } from 'node:crypto';
import type { RedisConnection } from './connections.js';

/**
 * The service's one rate limiter, shared by every process on one Redis: an exact sliding log per
 * window, one sorted-set entry per request admitted in the last `windowMs`, scored by Redis's own
 * clock (TIME) so the processes' clocks do not matter. The provider's per-key limits
 * (provider/limiter.ts) and each forward destination's `rate_per_second` use it. Written here
 * rather than taken from rate-limiter-flexible, which counts fixed or approximate windows: the
 * provider counts a sliding window exactly, and "no second holds more than N sends" is what a
 * destination's owner checks.
 *
 * ADMIT, one script, atomic: honour a pause (a 429's Retry-After seen by any process), trim,
 * count, then admit or say how long until the oldest entry leaves. Answer: -1 admitted, else the
 * wait in ms. Both keys should carry one hash tag, so on Redis Cluster they share a slot.
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
 * Re-stamps an admitted request with the time its answer arrived. The other side counted the
 * request when it arrived, which was before it answered; so a slot reused a full window after
 * the answer is a full window after the other side's count too, whatever the latencies, which
 * no fixed margin covers (a cold process's first request arrives later than the others).
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

/** One limit: at most `limit` requests in any `windowMs`, and a pause that holds them all. */
export interface Window {
  /** The sorted set of admitted requests. */
  readonly log: string;
  /** Set, with a TTL, while the other side asked to be left alone. */
  readonly pause: string;
  readonly limit: number;
  readonly windowMs: number;
}

export interface SlidingWindowLimiter {
  /** Admits one request now (its log entry's name), or answers how long to wait (ms). */
  tryAdmit(window: Window): Promise<{ readonly entry: string } | number>;
  /** The admitted request's answer arrived (or it failed): its slot counts from now. */
  settle(window: Window, entry: string): Promise<void>;
  /** Every process sharing the Redis holds off this window for `ms` (longer pauses win). */
  pause(window: Pick<Window, 'pause'>, ms: number): Promise<void>;
}

export function createSlidingWindowLimiter(redis: RedisConnection): SlidingWindowLimiter {
  return {
    async tryAdmit({ log, pause, limit, windowMs }) {
      const member = `${Date.now()}-${randomBytes(6).toString('hex')}`;
      const answer = Number(await redis.eval(ADMIT, 2, log, pause, windowMs, limit, member));
      return answer < 0 ? { entry: member } : answer;
    },
    async settle({ log, windowMs }, entry) {
      await redis.eval(SETTLE, 1, log, entry, windowMs);
    },
    async pause({ pause }, ms) {
      await redis.eval(PAUSE, 1, pause, Math.max(1, Math.ceil(ms)));
    },
  };
}
