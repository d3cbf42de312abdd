import { randomBytes } from 'node:crypto';
import type { RedisConnection } from '../../redis/connections.js';
import { SPEC_LIMITS, type Endpoint } from '../../provider-spec/rate-limits.js';

export type Admission =
  { readonly admitted: true } | { readonly admitted: false; readonly waitMs: number };

/**
 * An exact sliding log: the admitted requests of the last window, one sorted-set entry each,
 * scored by Redis's own clock (TIME), so several sandbox processes would agree. Trim, count,
 * then admit or tell how long until the oldest entry leaves the window. Rejections do not count.
 * The provider client has a limiter of its own on purpose: a bug shared would hide in both.
 */
const ADMIT = `
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
return tonumber(oldest[2]) + window - now`;

export function createRateLimiter(redis: RedisConnection, prefix: string, windowMs: number) {
  return async (keyId: string, endpoint: Endpoint): Promise<Admission> => {
    const member = `${Date.now()}-${randomBytes(6).toString('hex')}`;
    const wait = Number(
      await redis.eval(
        ADMIT,
        1,
        `${prefix}:rate:{${keyId}}:${endpoint}`,
        windowMs,
        SPEC_LIMITS[endpoint],
        member,
      ),
    );
    return wait < 0 ? { admitted: true } : { admitted: false, waitMs: Math.max(1, wait) };
  };
}
