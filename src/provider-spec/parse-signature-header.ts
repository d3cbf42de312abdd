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
