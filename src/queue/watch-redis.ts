import type { Redis } from 'ioredis';
import type { Logger } from 'pino';

/**
 * Logs a connection's ups and downs once per change, not once per reconnect attempt: ioredis
 * emits `error` for every failed attempt, which would flood the log during an outage.
 */
export function watchRedis(redis: Redis, logger: Logger, name: string): void {
  let down = false;
  redis.on('error', (error: unknown) => {
    if (down) return;
    down = true;
    logger.warn({ err: error, connection: name }, 'Redis unavailable; retrying');
  });
  redis.on('ready', () => {
    logger.info({ connection: name }, down ? 'Redis available again' : 'Redis connected');
    down = false;
  });
}
