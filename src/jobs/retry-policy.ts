import { UnrecoverableError } from 'bullmq';
import { backoffDelay } from './backoff.js';

/**
 * THE RETRY POLICY of jobs (deliveries and forwards), in the process that applies it: the
 * worker. Transient failures are retried after the one backoff formula (backoff.ts) with "equal
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
 * THE ONE WAY to say "no later attempt can change this": the error says `neverRetry`, and
 * isFinal reads nothing else of ours. Throw a NeverRetryError (or extend it); a class that must
 * extend something else first implements NeverRetry instead (a StorageRefusedError is a
 * StorageError, which the downloader, the CLI and start-up tell from a download's failure; a
 * PermanentForwardError is a ForwardError).
 */
export interface NeverRetry {
  readonly neverRetry: true;
}

/**
 * An error that fails its job at once. A BullMQ UnrecoverableError too, so that BullMQ itself
 * moves the job to failed without asking the backoff strategy.
 */
export class NeverRetryError extends UnrecoverableError implements NeverRetry {
  override name = 'NeverRetryError';
  readonly neverRetry = true;

  constructor(message: string, options?: ErrorOptions) {
    super(message);
    if (options?.cause !== undefined) this.cause = options.cause;
  }
}

/**
 * Does `error` fail its job at once? One that says NeverRetry; and BullMQ's own
 * UnrecoverableError, by class or by name (as its Job.shouldRetryJob asks), which BullMQ throws
 * itself (a job whose lock was lost past its attempts).
 */
export function isFinal(error: unknown): boolean {
  return (
    (error as Partial<NeverRetry> | null)?.neverRetry === true ||
    error instanceof UnrecoverableError ||
    (error as Error | null)?.name === 'UnrecoverableError'
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
