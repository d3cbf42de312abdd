import { UnrecoverableError } from 'bullmq';
import { backoffDelay } from './backoff.js';

/**
 * THE RETRY POLICY of jobs (deliveries and forwards), in the process that applies it: the
 * worker. Transient failures are retried after the house's backoff (backoff.ts) with "equal
 * jitter", never sooner than the other side asked (an error's `retryAfterMs`: a CDN's or a
 * destination's Retry-After), until `attempts` attempts were made. Permanent failures are not
 * retried at all (isFinal): BullMQ's UnrecoverableError, or any error that says `neverRetry`.
 */
export interface RetryPolicy {
  /** Attempts per job, the first included (DOWNLOAD_ATTEMPTS, FORWARD_ATTEMPTS). */
  readonly attempts: number;
  /** First retry delay (DOWNLOAD_BACKOFF_MS, FORWARD_BACKOFF_MS); doubles per attempt. */
  readonly backoffMs: number;
  /** The longest delay between two attempts. @defaultValue none */
  readonly maxDelayMs?: number;
}

/** What the other side asked for, when an error knows it (TransientDownloadError, a 429's). */
function askedMs(error: Error | undefined): number {
  const asked: unknown = (error as { retryAfterMs?: unknown } | undefined)?.retryAfterMs;
  return typeof asked === 'number' ? asked : 0;
}

/** attemptsMade counts the failed attempts so far (1 after the first failure). */
export function retryDelay(
  attemptsMade: number,
  baseMs: number,
  error?: Error,
  random = Math.random,
): number {
  const backoff = backoffDelay(attemptsMade, { firstMs: baseMs, jitter: 'equal' }, random);
  return Math.max(backoff, askedMs(error));
}

/**
 * An error that no later attempt can change, said by the error itself. For a class that must be
 * something else first, and so cannot extend BullMQ's UnrecoverableError: a StorageRefusedError
 * is a StorageError, which the downloader, the CLI and start-up tell from a download's failure.
 */
export interface NeverRetry {
  readonly neverRetry: true;
}

/**
 * Does `error` fail its job at once? BullMQ's UnrecoverableError, by class or by name (as its
 * Job.shouldRetryJob asks: a name survives where a class does not, across a sandboxed
 * processor), or an error that says NeverRetry.
 */
export function isFinal(error: unknown): boolean {
  return (
    error instanceof UnrecoverableError ||
    (error as Error | null)?.name === 'UnrecoverableError' ||
    (error as Partial<NeverRetry> | null)?.neverRetry === true
  );
}

/** BullMQ gives up on a job whose backoff strategy answers -1. */
const GIVE_UP = -1;

/**
 * The worker's BullMQ backoff strategy. Jobs are stored with a high attempts ceiling and a
 * backoff type of ours (queue/), so BullMQ asks this after every failure that it does not
 * itself know to be final: it decides when to stop, so the attempts set on a worker take effect
 * on every job it runs, whoever enqueued it, and an error that says NeverRetry fails the job at
 * once whatever its class.
 */
export function backoffStrategy(policy: RetryPolicy) {
  return (attemptsMade: number, _type?: string, error?: Error): number =>
    attemptsMade >= policy.attempts || isFinal(error)
      ? GIVE_UP
      : Math.min(retryDelay(attemptsMade, policy.backoffMs, error), policy.maxDelayMs ?? Infinity);
}
