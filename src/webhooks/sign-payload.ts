import { computeSignature } from './compute-signature.js';

export interface SignOptions {
  /** Unix seconds; defaults to now. */
  timestamp?: number;
}

/**
 * Builds an `X-Service-Signature` value exactly as the provider does. The CLI's `send` and the
 * tests use this one function, so what they send is what the provider sends.
 */
export function signPayload(
  body: string | Uint8Array,
  secret: string,
  { timestamp = Math.floor(Date.now() / 1000) }: SignOptions = {},
): string {
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  const t = String(timestamp);
  return `t=${t},v1=${computeSignature(secret, t, bytes).toString('hex')}`;
}
