import { computeSignature } from './compute-signature.js';

export interface SignOptions {
  /**
   * Unix seconds. A fraction is dropped: `t` is digits only.
   * @defaultValue now
   */
  timestamp?: number;
}

/**
 * Builds an `X-Service-Signature` value exactly as the provider does. The CLI's `send`, the
 * sandbox and the tests use this one function, so what they send is what the provider sends.
 * Throws RangeError for a time that is not a finite, non-negative number.
 */
export function signPayload(
  body: string | Uint8Array,
  secret: string,
  { timestamp = Date.now() / 1000 }: SignOptions = {},
): string {
  if (!Number.isFinite(timestamp) || timestamp < 0) {
    throw new RangeError(`signature timestamp must be a finite, non-negative number: ${timestamp}`);
  }
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  const t = String(Math.floor(timestamp));
  return `t=${t},v1=${computeSignature(secret, t, bytes).toString('hex')}`;
}
