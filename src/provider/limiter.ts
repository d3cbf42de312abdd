import type { RedisConnection } from '../redis/connections.js';
import { createSlidingWindowLimiter, type Window } from '../redis/sliding-window-limiter.js';
import type { Endpoint } from '../provider-spec/rate-limits.js';

export interface Limiter {
  /** Admits one request now (its log entry's name), or answers how long to wait (ms). */
  tryAdmit(keyId: string, endpoint: Endpoint): Promise<{ readonly entry: string } | number>;
  /** The admitted request's answer arrived (or it failed): its slot counts from now. */
  settle(keyId: string, endpoint: Endpoint, entry: string): Promise<void>;
  /** Every process sharing the Redis holds off this key and endpoint for `ms`. */
  pause(keyId: string, endpoint: Endpoint, ms: number): Promise<void>;
}

/**
 * The provider's per-key limits on the service's one limiter (redis/sliding-window-limiter.ts): one
 * window per (key, endpoint), both keys carrying the API key's id as hash tag.
 */
export function createLimiter(
  redis: RedisConnection,
  prefix: string,
  limits: Readonly<Record<Endpoint, number>>,
  windowMs: number,
): Limiter {
  const limiter = createSlidingWindowLimiter(redis);
  const window = (keyId: string, endpoint: Endpoint): Window => ({
    log: `${prefix}:provider:{${keyId}}:${endpoint}:log`,
    pause: `${prefix}:provider:{${keyId}}:${endpoint}:pause`,
    limit: limits[endpoint],
    windowMs,
  });
  return {
    tryAdmit: (keyId, endpoint) => limiter.tryAdmit(window(keyId, endpoint)),
    settle: (keyId, endpoint, entry) => limiter.settle(window(keyId, endpoint), entry),
    pause: (keyId, endpoint, ms) => limiter.pause(window(keyId, endpoint), ms),
  };
}
