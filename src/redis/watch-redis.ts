import type { RedisConnection } from './connections.js';
import type { Logger } from 'pino';

export interface ConnectionLog {
  /**
   * Logs "unavailable" once per outage, however many reconnect attempts fail; before the first
   * connection, "not reachable yet" once per process (per logger), whatever the connections.
   */
  down(error: unknown): void;
  /** Logs "connected" the first time, then "available again" once when an outage ends. */
  up(): void;
  /** True between down() and up(). */
  readonly isDown: boolean;
}

/** The loggers that have said "not reachable yet": the process's connections share one. */
const toldNotYet = new WeakSet<Logger>();

/**
 * One line per change of state, not one per reconnect attempt: ioredis emits `error` for every
 * failed attempt, and BullMQ repeats each of its connections' errors on the worker, which flooded
 * the log with two stack traces a second during an outage. The target is logged without password.
 */
export function connectionLog(logger: Logger, name: string, target: string): ConnectionLog {
  let down = false;
  let connected = false;
  return {
    down(error) {
      if (down) return;
      down = true;
      const reason = error instanceof Error ? error.message : String(error);
      if (connected) {
        logger.warn({ connection: name, redis: target, reason }, 'Redis unavailable; retrying');
        return;
      }
      // Never reached since the start: not an outage but a REDIS_URL to check. Said once for
      // the process, though ROLE=all has two connections (the same logger) that both retry.
      if (toldNotYet.has(logger)) return;
      toldNotYet.add(logger);
      logger.warn({ redis: target, reason }, 'Redis not reachable yet; retrying until it answers');
    },
    up() {
      if (connected && !down) return;
      logger.info(
        { connection: name, redis: target },
        connected ? 'Redis available again' : 'Redis connected',
      );
      connected = true;
      down = false;
    },
    get isDown() {
      return down;
    },
  };
}

/** Wires a connection's events to a ConnectionLog; returns the log, for errors seen elsewhere. */
export function watchRedis(
  redis: RedisConnection,
  logger: Logger,
  name: string,
  target: string,
): ConnectionLog {
  const log = connectionLog(logger, name, target);
  redis.on('error', (error: unknown) => {
    log.down(error);
  });
  redis.on('ready', () => {
    log.up();
  });
  return log;
}

/** Errors that say "Redis is unreachable", as ioredis and BullMQ report them. */
export function isConnectionError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as NodeJS.ErrnoException).code;
  if (
    code !== undefined &&
    /^(ECONN|ETIMEDOUT|ENOTFOUND|EHOSTUNREACH|ENETUNREACH|EPIPE|EAI_)/.test(code)
  )
    return true;
  return /Connection is closed|Stream isn't writeable|connect ETIMEDOUT|MaxRetriesPerRequest/i.test(
    error.message,
  );
}
