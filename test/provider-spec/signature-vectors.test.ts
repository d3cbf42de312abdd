import fc from 'fast-check';
import { signPayload } from '../../src/provider-spec/signature';
import { verifySignature } from '../../src/provider-spec/signature';

/**
 * Known answers, computed once outside this code base and written down, so that a mistake shared
 * by the signer and the verifier (the unit tests elsewhere sign with the verifier's own
 * computeSignature) cannot pass:
 *
 *   printf '%s.%s' "$t" "$body" | openssl dgst -sha256 -hmac "$secret" -r
 */
const VECTORS = [
  {
    secret: 'whsec_test_secret',
    t: 1700000000,
    body: '{"event":"key.revoked","data":{"id":"key_demo"}}',
    v1: 'ea5ca0d9028aaa47a221660349755ed7bfdd746b63c533e32ba46e500bc956c1',
  },
  {
    secret: 'whsec_5f2b9c',
    t: 1735689600,
    body: '{"event":"audio.ready","data":{"id":"tts_01","kind":"tts","audio_url":"https://cdn.example/a.mp3","voice":"alloy","created_at":"2025-01-01T00:00:00Z"}}',
    v1: 'd7d18144dd103552afe2ebf8b14ad2e75f51bea8ab9e5b69a96bb337db453fcf',
  },
  {
    // UTF-8 in the secret and the body: both are signed as their UTF-8 bytes.
    secret: 'sécret-ü',
    t: 2000000000,
    body: '{"data":{"id":"é🎵"},"event":"audio.failed"}',
    v1: 'a7939835b3bde298d126165215420678a8dfa44f2b0d24370d6d3f6c85223c90',
  },
] as const;

const verify = (header: string, body: Uint8Array, secret: string, now: number) =>
  verifySignature({ header, body, secrets: [secret], toleranceSeconds: 300, now });

describe.each(VECTORS)('known answer: t=$t', ({ secret, t, body, v1 }) => {
  const bytes = Buffer.from(body, 'utf8');

  it('the verifier accepts the digest openssl computed', () => {
    expect(verify(`t=${t},v1=${v1}`, bytes, secret, t)).toEqual({
      ok: true,
      timestamp: t,
      secretIndex: 0,
    });
  });

  it('the signer (sandbox, CLI, tests) writes exactly that header', () => {
    expect(signPayload(body, secret, { timestamp: t })).toBe(`t=${t},v1=${v1}`);
  });

  it('any one byte of the body changed: refused', () => {
    fc.assert(
      fc.property(
        fc.nat({ max: bytes.length - 1 }),
        fc.integer({ min: 1, max: 255 }),
        (at, delta) => {
          const changed = Buffer.from(bytes);
          changed[at] = (changed[at]! + delta) % 256;
          return !verify(`t=${t},v1=${v1}`, changed, secret, t).ok;
        },
      ),
    );
  });

  it('any one digit of t changed (and the clock moved with it): refused', () => {
    const digits = String(t);
    fc.assert(
      fc.property(
        fc.nat({ max: digits.length - 1 }),
        fc.integer({ min: 1, max: 9 }),
        (at, delta) => {
          const digit = (Number(digits[at]) + delta) % 10;
          const other = `${digits.slice(0, at)}${digit}${digits.slice(at + 1)}`;
          // The leading digit may become 0: "0…" is not a valid t, refused as malformed.
          return !verify(`t=${other},v1=${v1}`, bytes, secret, Number(other)).ok;
        },
      ),
    );
  });

  it('any one hex digit of the digest changed: refused', () => {
    fc.assert(
      fc.property(fc.nat({ max: v1.length - 1 }), fc.integer({ min: 1, max: 15 }), (at, delta) => {
        const nibble = ((parseInt(v1[at]!, 16) + delta) % 16).toString(16);
        const other = `${v1.slice(0, at)}${nibble}${v1.slice(at + 1)}`;
        return !verify(`t=${t},v1=${other}`, bytes, secret, t).ok;
      }),
    );
  });

  it('a different secret: refused', () => {
    expect(verify(`t=${t},v1=${v1}`, bytes, `${secret}x`, t)).toMatchObject({
      ok: false,
      reason: 'mismatch',
    });
  });
});
