import { parseRetryAfter } from '../download/parse-retry-after.js';
import { backoffDelay } from '../jobs/backoff.js';

/**
 * How long the provider asked us to wait, in ms: `retry-after-ms` wins when present (a precise
 * form some APIs send); else `Retry-After` as seconds or an HTTP date (the spec does not say
 * which). An absurd value is capped at the window: by then every slot has freed anyway.
 * Undefined when the answer asked nothing.
 */
export function askedWaitMs(
  headers: Readonly<Record<string, string | string[] | undefined>>,
  windowMs: number,
  now = Date.now(),
): number | undefined {
  const first = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);
  const ms = first(headers['retry-after-ms']);
  if (ms !== undefined && /^\d+(\.\d+)?$/.test(ms.trim())) return Math.min(Number(ms), windowMs);
  const asked = parseRetryAfter(first(headers['retry-after']), now);
  return asked === undefined ? undefined : Math.min(asked, windowMs);
}

/**
 * The wait before the provider client's next try (attempt 0 first): the one backoff formula with
 * full jitter (AWS's), a random wait up to base·2ⁿ, capped, so clients sharing a limit do not
 * retry in step.
 */
export function fullJitter(attempt: number, baseMs = 500, capMs = 30_000, random = Math.random) {
  return backoffDelay(attempt + 1, { firstMs: baseMs, maxMs: capMs, jitter: 'full' }, random);
}
