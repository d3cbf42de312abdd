import { timingSafeEqual } from 'node:crypto';
import { computeSignature } from './compute-signature.js';
import { parseSignatureHeader } from './parse-signature-header.js';

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
