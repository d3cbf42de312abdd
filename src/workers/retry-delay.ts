import { TransientDownloadError } from '../download/download-errors.js';

/**
 * Exponential backoff with "equal jitter" (half fixed, half random, so workers that failed
 * together spread out), and never sooner than the server asked for with Retry-After.
 * attemptsMade counts the failed attempts so far (1 after the first failure).
 */
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
