import { backoffDelay } from '../../src/jobs/backoff';
import { PermanentDownloadError, TransientDownloadError } from '../../src/download/download-errors';
import { MAX_RETRY_AFTER_MS, parseRetryAfter } from '../../src/download/parse-retry-after';
import { formatBytes } from '../../src/download/format-bytes';
import { backoffStrategy, isFinal, retryDelay } from '../../src/jobs/retry-policy';
import { StorageError, StorageRefusedError } from '../../src/storage/storage-errors';

describe('retryDelay', () => {
  it('doubles per attempt, between half and all of the exponential step', () => {
    expect([1, 2, 3, 8].map((n) => retryDelay(n, 2000, undefined, () => 0))).toEqual([
      1000, 2000, 4000, 128_000,
    ]);
    expect([1, 2, 3, 8].map((n) => retryDelay(n, 2000, undefined, () => 1))).toEqual([
      2000, 4000, 8000, 256_000,
    ]);
  });

  it('waits at least as long as Retry-After asked', () => {
    expect(retryDelay(1, 2000, new TransientDownloadError('429', 30_000), () => 0.5)).toBe(30_000);
    expect(retryDelay(5, 2000, new TransientDownloadError('429', 1000), () => 0)).toBe(16_000);
    expect(retryDelay(1, 2000, new PermanentDownloadError('x'), () => 0)).toBe(1000);
  });
});

describe('backoffStrategy: when a job is tried again', () => {
  const strategy = backoffStrategy({ attempts: 3, backoffMs: 1000 });

  it('retries store trouble and transient failures until the attempts are spent', () => {
    for (const error of [new StorageError('EIO'), new TransientDownloadError('503')]) {
      expect(strategy(1, 'retry-delay', error)).toBeGreaterThan(0);
      expect(strategy(2, 'retry-delay', error)).toBeGreaterThan(0);
      expect(strategy(3, 'retry-delay', error)).toBe(-1);
    }
  });

  it('gives up at once on an error that says neverRetry, whatever its class and name', () => {
    const refused = new StorageRefusedError('the key is over 1,024 bytes');
    // Still store trouble to every caller that tells it from a download's, under its own name.
    expect(refused).toBeInstanceOf(StorageError);
    expect(refused.name).toBe('StorageRefusedError');
    expect(isFinal(refused)).toBe(true);
    expect(strategy(1, 'retry-delay', refused)).toBe(-1);
    expect(strategy(1, 'retry-delay', Object.assign(new Error('x'), { neverRetry: true }))).toBe(
      -1,
    );
    expect(isFinal(new PermanentDownloadError('404'))).toBe(true);
    expect(isFinal(new StorageError('EIO'))).toBe(false);
    expect(isFinal(undefined)).toBe(false);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-11-21T12:00:00Z');
  it.each([
    [undefined, undefined],
    ['', undefined],
    ['soon', undefined],
    ['-5', undefined],
    ['1.5', undefined],
    ['0', 0],
    ['120', 120_000],
    ['99999999', MAX_RETRY_AFTER_MS],
    ['Sat, 21 Nov 2026 12:00:30 GMT', 30_000],
    ['Sat, 21 Nov 2026 11:00:00 GMT', 0],
  ])('%j → %j', (header, expected) => {
    expect(parseRetryAfter(header, now)).toBe(expected);
  });
});

describe('formatBytes', () => {
  it.each([
    [512, '512 bytes'],
    [64_000, '64 KB'],
    [104_857_600, '104.9 MB'],
    [250_000_000, '250 MB'],
  ])('%d → %s', (bytes, text) => {
    expect(formatBytes(bytes)).toBe(text);
  });
});

describe('backoffDelay: one formula, each user its own numbers', () => {
  it("a receiver process's restarts: 1, 2, 4 … s, at most 30 s, no jitter", () => {
    const restart = { firstMs: 1000, maxMs: 30_000, jitter: 'none' } as const;
    expect([1, 2, 3, 5, 6, 20].map((n) => backoffDelay(n, restart))).toEqual([
      1000, 2000, 4000, 16_000, 30_000, 30_000,
    ]);
  });

  it('full jitter spreads from 0 to the step; equal jitter from half of it', () => {
    const full = { firstMs: 500, maxMs: 30_000, jitter: 'full' } as const;
    expect(backoffDelay(4, full, () => 0)).toBe(0);
    expect(backoffDelay(4, full, () => 1)).toBe(4000);
    const equal = { firstMs: 500, jitter: 'equal' } as const;
    expect(backoffDelay(4, equal, () => 0)).toBe(2000);
    expect(backoffDelay(4, equal, () => 1)).toBe(4000);
  });
});
