import fc from 'fast-check';
import { computeSignature } from '../../src/provider-spec/signature';
import { parseSignatureHeader } from '../../src/provider-spec/signature';
import { signPayload } from '../../src/provider-spec/signature';
import { verifySignature, type VerifyInput } from '../../src/provider-spec/signature';

const NOW = 1_795_000_000;
const SECRET = 'whsec_current';
const body = Buffer.from('{"event":"audio.ready","data":{"id":"a1"}}');
const digest = (secret = SECRET, t = String(NOW), bytes: Uint8Array = body) =>
  computeSignature(secret, t, bytes).toString('hex');

function verify(header: string | undefined, overrides: Partial<VerifyInput> = {}) {
  return verifySignature({
    header,
    body,
    secrets: [SECRET],
    toleranceSeconds: 300,
    now: NOW,
    ...overrides,
  });
}

describe('parseSignatureHeader', () => {
  it('reads t and every v1, and ignores unknown keys', () => {
    const parsed = parseSignatureHeader(`t=${NOW},v1=${digest()},v0=legacy,v1=${digest('other')}`);
    expect(parsed).toEqual({
      timestamp: String(NOW),
      digests: [Buffer.from(digest(), 'hex'), Buffer.from(digest('other'), 'hex')],
    });
  });

  it.each([
    ['missing', undefined, /missing/],
    ['empty', '', /missing/],
    ['blank', '   ', /missing/],
    ['garbled', 'garbage', /key=value/],
    ['no t', `v1=${'a'.repeat(64)}`, /no t/],
    ['no v1', `t=${NOW}`, /no v1/],
    ['t with letters', `t=123abc,v1=${'a'.repeat(64)}`, /t must be/],
    ['t of 11 digits', `t=12345678901,v1=${'a'.repeat(64)}`, /t must be/],
    ['negative t', `t=-5,v1=${'a'.repeat(64)}`, /t must be/],
    ['repeated t', `t=1,t=2,v1=${'a'.repeat(64)}`, /repeated t/],
    ['hex with junk appended', `t=${NOW},v1=${'a'.repeat(64)}zz`, /64 lowercase hex/],
    ['short hex', `t=${NOW},v1=${'a'.repeat(63)}`, /64 lowercase hex/],
    ['uppercase hex', `t=${NOW},v1=${'A'.repeat(64)}`, /64 lowercase hex/],
    ['empty pair', `t=${NOW},,v1=${'a'.repeat(64)}`, /key=value/],
  ])('rejects a %s header', (_name, header, message) => {
    const parsed = parseSignatureHeader(header);
    expect('error' in parsed && parsed.error).toMatch(message);
  });
});

describe('verifySignature', () => {
  it('accepts a valid signature', () => {
    expect(verify(`t=${NOW},v1=${digest()}`)).toEqual({ ok: true, timestamp: NOW, secretIndex: 0 });
  });

  it('accepts when any of several v1 values matches', () => {
    expect(verify(`t=${NOW},v1=${digest('stale')},v1=${digest()}`).ok).toBe(true);
  });

  it('accepts a delivery signed with any configured secret (rotation)', () => {
    const header = `t=${NOW},v1=${digest('whsec_previous')}`;
    expect(verify(header, { secrets: [SECRET, 'whsec_previous'] })).toEqual({
      ok: true,
      timestamp: NOW,
      secretIndex: 1,
    });
    expect(verify(header)).toMatchObject({ ok: false, reason: 'mismatch' });
  });

  it('rejects a wrong secret and a tampered body without revealing the expected digest', () => {
    const wrong = verify(`t=${NOW},v1=${digest('wrong')}`);
    const tampered = verify(`t=${NOW},v1=${digest()}`, { body: Buffer.from('{"event":"x"}') });
    for (const result of [wrong, tampered]) {
      expect(result).toEqual({
        ok: false,
        reason: 'mismatch',
        detail: 'no signature matched any configured secret',
      });
    }
  });

  it('signs the exact t characters: a re-formatted t does not verify', () => {
    const now = 99_999_999;
    const header = `t=0${now},v1=${digest(SECRET, String(now))}`;
    expect(verify(header, { now })).toMatchObject({ ok: false, reason: 'mismatch' });
    expect(verify(`t=${now},v1=${digest(SECRET, String(now))}`, { now }).ok).toBe(true);
  });

  it('verifies an empty body', () => {
    const empty = Buffer.alloc(0);
    expect(verify(`t=${NOW},v1=${digest(SECRET, String(NOW), empty)}`, { body: empty }).ok).toBe(
      true,
    );
  });

  it.each([
    ['stale, just inside', NOW - 300, true],
    ['stale, just outside', NOW - 301, false],
    ['future, just inside', NOW + 300, true],
    ['future, just outside', NOW + 301, false],
  ])('timestamp %s tolerance', (_name, t, ok) => {
    const result = verify(`t=${t},v1=${digest(SECRET, String(t))}`);
    expect(result.ok).toBe(ok);
    if (!result.ok)
      expect(result).toMatchObject({
        reason: 'timestamp',
        detail: expect.stringMatching(/outside tolerance/),
      });
  });

  it.each([
    [undefined, 'missing'],
    ['t=1', 'malformed'],
  ])('classifies %p as %s', (header, reason) => {
    expect(verify(header)).toMatchObject({ ok: false, reason });
  });
});

describe('properties', () => {
  it('sign → verify round-trips for arbitrary bodies, secrets and in-window timestamps', () => {
    fc.assert(
      fc.property(
        fc.uint8Array(),
        fc.string({ minLength: 1 }),
        fc.integer({ min: -300, max: 300 }),
        (bytes, secret, skew) => {
          const header = signPayload(bytes, secret, { timestamp: NOW + skew });
          return verifySignature({
            header,
            body: bytes,
            secrets: [secret],
            toleranceSeconds: 300,
            now: NOW,
          }).ok;
        },
      ),
    );
  });

  it('a different body never verifies', () => {
    fc.assert(
      fc.property(fc.uint8Array(), fc.uint8Array(), (a, b) => {
        fc.pre(!Buffer.from(a).equals(Buffer.from(b)));
        const header = signPayload(a, SECRET, { timestamp: NOW });
        return !verify(header, { body: b }).ok;
      }),
    );
  });

  it('never throws on arbitrary header strings and bodies', () => {
    fc.assert(
      fc.property(fc.string(), fc.uint8Array(), (header, bytes) => {
        const result = verify(header, { body: bytes });
        return typeof result.ok === 'boolean';
      }),
    );
  });

  it('never throws on headers built from the grammar’s own pieces', () => {
    const piece = fc.oneof(
      fc.constantFrom('t', 'v1', 'v0', '', ' t', 'v1 '),
      fc.stringMatching(/^[0-9a-fA-F]{0,70}$/),
      fc.string(),
    );
    const header = fc
      .array(fc.tuple(piece, fc.constantFrom('=', '', '=='), piece))
      .map((pairs) => pairs.map(([k, eq, v]) => `${k}${eq}${v}`).join(','));
    fc.assert(fc.property(header, (h) => typeof verify(h).ok === 'boolean'));
  });
});

describe('signPayload', () => {
  it('drops a fraction of a second: t is digits only, as the verifier requires', () => {
    const header = signPayload('{}', SECRET, { timestamp: NOW + 0.25 });
    expect(header).toMatch(new RegExp(`^t=${NOW},v1=[0-9a-f]{64}$`));
    expect(verify(header, { body: Buffer.from('{}') })).toMatchObject({ ok: true, timestamp: NOW });
  });

  it.each([Number.NaN, Number.POSITIVE_INFINITY, -1])('refuses the time %p', (timestamp) => {
    expect(() => signPayload('{}', SECRET, { timestamp })).toThrow(RangeError);
  });
});
