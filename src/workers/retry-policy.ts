import { TransientDownloadError } from '../download/download-errors.js';

/**
 * THE RETRY POLICY of delivery jobs, in the process that applies it: the worker. Transient
 * failures (network, timeouts, 408, 429, 5xx, storage) are retried with exponential backoff and
 * "equal jitter" (half fixed, half random, so workers that failed together spread out), never
 * sooner than the server asked with Retry-After, until DOWNLOAD_ATTEMPTS attempts were made.
 * Permanent failures throw BullMQ's UnrecoverableError and are not retried at all.
 */
export interface RetryPolicy {
  /** Attempts per job, the first included (DOWNLOAD_ATTEMPTS). */
  readonly attempts: number;
  /** First retry delay (DOWNLOAD_BACKOFF_MS); doubles per attempt. */
  readonly backoffMs: number;
  /** The longest delay between two attempts. @defaultValue none */
  readonly maxDelayMs?: number;
}

/** attemptsMade counts the failed attempts so far (1 after the first failure). */
export function retryDelay(
  attemptsMade: number,
  baseMs: number,
  error?: Error,
  random = Math.random,
): number {
  const exponential = baseMs * 2 ** Math.max(0, attemptsMade - 1);
  const jittered = exponential / 2 + random() * (exponential / 2);
  const asked = error instanceof TransientDownloadError ? (error.retryAfterMs ?? 0) : 0;
  return Math.round(Math.max(jittered, asked));
}

/** BullMQ gives up on a job whose backoff strategy answers -1. */
const GIVE_UP = -1;

/**
 * The worker's BullMQ backoff strategy. Jobs are stored with a high attempts ceiling
 * (JOB_ATTEMPTS_CEILING); this decides when to stop, so DOWNLOAD_ATTEMPTS set on a worker takes
 * effect on every job it runs, whoever enqueued it.
 */
export function backoffStrategy(policy: RetryPolicy) {
  return (attemptsMade: number, _type?: string, error?: Error): number =>
    attemptsMade >= policy.attempts
      ? GIVE_UP
      : Math.min(retryDelay(attemptsMade, policy.backoffMs, error), policy.maxDelayMs ?? Infinity);
}
