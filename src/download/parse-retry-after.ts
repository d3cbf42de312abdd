/** The longest wait a server may impose through Retry-After (the sender's own longest gap). */
export const MAX_RETRY_AFTER_MS = 6 * 3600 * 1000;

/**
 * Retry-After as delay-seconds or an HTTP date (RFC 9110 §10.2.3), in ms, capped. The provider
 * does not say which unit it uses (docs/provider.md, "Rate limits"), so both forms are read; anything else is ignored.
 */
export function parseRetryAfter(header: string | undefined, now = Date.now()): number | undefined {
  if (header === undefined) return undefined;
  const value = header.trim();
  let ms: number;
  if (/^\d+$/.test(value)) ms = Number(value) * 1000;
  else {
    const date = Date.parse(value);
    if (Number.isNaN(date) || !/[a-z]/i.test(value)) return undefined;
    ms = Math.max(0, date - now);
  }
  return Math.min(ms, MAX_RETRY_AFTER_MS);
}
