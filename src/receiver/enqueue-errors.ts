import { DeadlineError } from '../util/deadline.js';
import { isConnectionError } from '../redis/watch-redis.js';

/** Redis could not enqueue the delivery now (down, failing, too slow, full): the sender retries. */
export class EnqueueUnavailableError extends Error {
  override name = 'EnqueueUnavailableError';
}

/** The delivery can never be enqueued as sent: retrying cannot help, so it is the sender's 400. */
export class UnqueueableDeliveryError extends Error {
  override name = 'UnqueueableDeliveryError';
}

/** What ioredis says when a command could not be sent or answered in time. */
const REDIS_TROUBLE =
  /Command timed out|Connection is closed|Stream isn't writeable|enableOfflineQueue|Reached the max retries/i;
/**
 * Error replies of a Redis that is there but cannot take the write (OOM, READONLY, LOADING…),
 * and a transaction it applied none of (an EXEC that answered nil: redis/replica-wait.ts).
 */
const REDIS_ERROR_NAMES = new Set([
  'ReplyError',
  'MaxRetriesPerRequestError',
  'AbortError',
  'NilExecError',
]);

/**
 * Sorts a failed enqueue by its kind of trouble, at the boundary where the cause is known: Redis
 * trouble is temporary (503); a body that overflows the serialiser's stack will fail the same way
 * on every retry (400); anything else is a defect of ours and stays as it is (500, logged).
 */
export function classifyEnqueueError(error: unknown): Error {
  if (error instanceof EnqueueUnavailableError || error instanceof UnqueueableDeliveryError)
    return error;
  if (error instanceof DeadlineError)
    return new EnqueueUnavailableError(error.message, { cause: error });
  if (error instanceof RangeError && /call stack/i.test(error.message)) {
    return new UnqueueableDeliveryError('the delivery nests too deeply to be stored as sent', {
      cause: error,
    });
  }
  if (
    error instanceof Error &&
    (REDIS_ERROR_NAMES.has(error.name) ||
      REDIS_TROUBLE.test(error.message) ||
      isConnectionError(error))
  ) {
    return new EnqueueUnavailableError(`Redis could not store the delivery: ${error.message}`, {
      cause: error,
    });
  }
  return error instanceof Error ? error : new Error(String(error));
}
