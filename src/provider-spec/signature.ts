import { timingSafeEqual, createHmac } from 'node:crypto';

export type SignatureFailureReason = 'missing' | 'malformed' | 'timestamp' | 'mismatch';

export type VerifyResult =
  | {
      readonly ok: true;
      readonly timestamp: number;
      /** Which configured secret verified, 0 first: watch it to see a rotation complete. */
      readonly secretIndex: number;
    }
  | { readonly ok: false; readonly reason: SignatureFailureReason; readonly detail: string };

export interface VerifyInput {
  readonly header: string | undefined;
  readonly body: Uint8Array;
  readonly secrets: readonly string[];
  readonly toleranceSeconds: number;
  /** Unix seconds; a parameter so the check stays pure and testable. */
  readonly now: number;
}

/**
 * Verifies an `X-Service-Signature` against the raw body with every configured secret. The
 * timestamp must be within tolerance in both directions: Stripe's check is one-sided and so
 * accepts signatures dated in the future. Details help an integrator and never reveal an
 * expected value.
 */
export function verifySignature(input: VerifyInput): VerifyResult {
  const parsed = parseSignatureHeader(input.header);
  if ('error' in parsed) {
    const reason =
      input.header === undefined || input.header.trim() === '' ? 'missing' : 'malformed';
    return { ok: false, reason, detail: parsed.error };
  }
  const timestamp = Number(parsed.timestamp);
  if (Math.abs(input.now - timestamp) > input.toleranceSeconds) {
    return {
      ok: false,
      reason: 'timestamp',
      detail: `signature timestamp outside tolerance of ${input.toleranceSeconds} s; check the clocks`,
    };
  }
  for (const [secretIndex, secret] of input.secrets.entries()) {
    const expected = computeSignature(secret, parsed.timestamp, input.body);
    for (const digest of parsed.digests) {
      // timingSafeEqual throws on unequal lengths; the parser guarantees 32 bytes, this keeps it so.
      if (digest.length === expected.length && timingSafeEqual(digest, expected)) {
        return { ok: true, timestamp, secretIndex };
      }
    }
  }
  return { ok: false, reason: 'mismatch', detail: 'no signature matched any configured secret' };
}

/** HMAC-SHA256 over `<t>.<raw body>` (docs/provider.md, "The signature"), as raw bytes. */
export function computeSignature(secret: string, timestamp: string, body: Uint8Array): Buffer {
  return createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest();
}

export interface SignatureHeader {
  /** The `t` value exactly as sent; the HMAC covers these characters. */
  readonly timestamp: string;
  /** Every `v1` digest, decoded to 32 bytes. */
  readonly digests: readonly Buffer[];
}

const TIMESTAMP = /^\d{1,10}$/;
const DIGEST = /^[0-9a-f]{64}$/;

/**
 * Parses `t=<digits>,v1=<hex>[,v1=<hex>…]` strictly: unlike `parseInt`, `123abc` is not a
 * timestamp, and a digest with anything appended is not a digest. Unknown keys are ignored so the
 * provider can add schemes (`v2=`) without breaking us. Returns a reason instead of throwing: the
 * header is attacker-controlled and its failures are expected.
 */
export function parseSignatureHeader(
  header: string | undefined,
): SignatureHeader | { readonly error: string } {
  if (header === undefined || header.trim() === '') {
    return { error: 'missing X-Service-Signature header' };
  }
  let timestamp: string | undefined;
  const digests: Buffer[] = [];
  for (const item of header.split(',')) {
    const eq = item.indexOf('=');
    if (eq <= 0) return { error: 'malformed X-Service-Signature: expected key=value pairs' };
    const key = item.slice(0, eq).trim();
    const value = item.slice(eq + 1).trim();
    if (key === 't') {
      if (timestamp !== undefined) return { error: 'malformed X-Service-Signature: repeated t' };
      if (!TIMESTAMP.test(value)) {
        return { error: 'malformed X-Service-Signature: t must be 1-10 digits' };
      }
      timestamp = value;
    } else if (key === 'v1') {
      if (!DIGEST.test(value)) {
        return { error: 'malformed X-Service-Signature: v1 must be 64 lowercase hex characters' };
      }
      digests.push(Buffer.from(value, 'hex'));
    }
  }
  if (timestamp === undefined) return { error: 'malformed X-Service-Signature: no t' };
  if (digests.length === 0) return { error: 'malformed X-Service-Signature: no v1' };
  return { timestamp, digests };
}

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
