import { askedWaitMs, fullJitter } from '../../src/provider/retry-wait';
import { canonicalJson } from '../../src/provider/tts-cache';

describe('askedWaitMs', () => {
  const now = Date.parse('2026-11-22T10:00:00Z');

  it('reads Retry-After as seconds or as an HTTP date', () => {
    expect(askedWaitMs({ 'retry-after': '7' }, 60_000, now)).toBe(7000);
    expect(askedWaitMs({ 'retry-after': 'Sun, 22 Nov 2026 10:00:12 GMT' }, 60_000, now)).toBe(
      12_000,
    );
    expect(askedWaitMs({ 'retry-after': 'Sun, 22 Nov 2026 09:59:00 GMT' }, 60_000, now)).toBe(0);
  });

  it('lets retry-after-ms win, and caps an absurd wait at the window', () => {
    expect(askedWaitMs({ 'retry-after': '7', 'retry-after-ms': '1500' }, 60_000, now)).toBe(1500);
    expect(askedWaitMs({ 'retry-after': '86400' }, 60_000, now)).toBe(60_000);
    expect(askedWaitMs({ 'retry-after-ms': '9999999' }, 2000, now)).toBe(2000);
  });

  it('asks nothing when there is no usable header (unlike parseInt, "5s" is not 5)', () => {
    expect(askedWaitMs({}, 60_000, now)).toBeUndefined();
    expect(askedWaitMs({ 'retry-after': '5s' }, 60_000, now)).toBeUndefined();
    expect(askedWaitMs({ 'retry-after': '-1' }, 60_000, now)).toBeUndefined();
  });
});

describe('fullJitter', () => {
  it('draws from zero up to base·2ⁿ, capped', () => {
    expect(fullJitter(0, 500, 30_000, () => 0.999)).toBe(500);
    expect(fullJitter(3, 500, 30_000, () => 0.5)).toBe(2000);
    expect(fullJitter(10, 500, 30_000, () => 1)).toBe(30_000);
    expect(fullJitter(2, 500, 30_000, () => 0)).toBe(0);
  });
});

describe('canonicalJson', () => {
  it('is the same for the same request whatever the order of its keys, at every level', () => {
    expect(canonicalJson({ voice: 'a', text: 't', opts: { b: 1, a: [2, { d: 1, c: 0 }] } })).toBe(
      canonicalJson({ opts: { a: [2, { c: 0, d: 1 }], b: 1 }, text: 't', voice: 'a' }),
    );
  });

  it('tells different requests apart, and ignores undefined fields as JSON does', () => {
    expect(canonicalJson({ text: 'a', voice: 'x' })).not.toBe(
      canonicalJson({ text: 'a', voice: 'y' }),
    );
    expect(canonicalJson({ text: 'a', speed: undefined })).toBe(canonicalJson({ text: 'a' }));
  });
});
