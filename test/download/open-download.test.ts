import { errors } from 'undici';
import { PermanentDownloadError, TransientDownloadError } from '../../src/download/download-errors';
import { checkUrl, classifyNetworkError, statusError } from '../../src/download/open-download';

const ALLOWED = ['https://cdn.example.com', 'https://127.0.0.1:8443'];

describe('checkUrl', () => {
  it.each([
    'https://cdn.example.com/a.mp3',
    'https://CDN.example.com:443/a.mp3',
    'https://127.0.0.1:8443/x',
  ])('allows %s', (url) => {
    expect(() => {
      checkUrl(new URL(url), ALLOWED);
    }).not.toThrow();
  });

  it.each([
    ['http://cdn.example.com/a.mp3', /http: URL refused: only https/],
    ['https://u:p@cdn.example.com/a.mp3', /credentials refused/],
    ['https://cdn.example.com:8443/a.mp3', /origin https:\/\/cdn.example.com:8443 not in CDN_URL/],
    ['https://evil.example.com/a.mp3', /not in CDN_URL/],
  ])('refuses %s for good', (url, reason) => {
    expect(() => {
      checkUrl(new URL(url), ALLOWED);
    }).toThrow(PermanentDownloadError);
    expect(() => {
      checkUrl(new URL(url), ALLOWED);
    }).toThrow(reason);
  });
});

describe('statusError', () => {
  it.each([408, 429, 500, 502, 503])('%i is worth retrying', (status) => {
    expect(statusError(status, undefined)).toBeInstanceOf(TransientDownloadError);
  });

  it.each([400, 401, 403, 404, 410, 451])('%i is final', (status) => {
    expect(statusError(status, undefined)).toBeInstanceOf(PermanentDownloadError);
  });

  it('carries the Retry-After the CDN asked for, seconds or date', () => {
    expect(statusError(429, '7')).toMatchObject({ retryAfterMs: 7000 });
    expect(statusError(503, ['2'])).toMatchObject({ retryAfterMs: 2000 });
    expect(statusError(503, 'soon')).toMatchObject({ retryAfterMs: undefined });
  });
});

describe('classifyNetworkError', () => {
  it('keeps our own verdicts, also when wrapped as a cause', () => {
    const permanent = new PermanentDownloadError('no');
    expect(classifyNetworkError(permanent)).toBe(permanent);
    expect(classifyNetworkError(new Error('wrapped', { cause: permanent }))).toBe(permanent);
    const transient = new TransientDownloadError('later');
    expect(classifyNetworkError(transient)).toBe(transient);
  });

  it('names the deadline when its signal fired, whatever the error looks like', () => {
    const deadline = AbortSignal.abort();
    const error = classifyNetworkError(new Error('aborted'), deadline);
    expect(error).toBeInstanceOf(TransientDownloadError);
    expect(error.message).toMatch(/DOWNLOAD_TIMEOUT_MS/);
  });

  it('calls timeouts timeouts, and anything else a transient download failure', () => {
    expect(classifyNetworkError(new errors.HeadersTimeoutError()).message).toMatch(
      /^CDN timed out/,
    );
    expect(classifyNetworkError(new errors.BodyTimeoutError()).message).toMatch(/^CDN timed out/);
    const reset = classifyNetworkError(new Error('socket hang up'));
    expect(reset).toBeInstanceOf(TransientDownloadError);
    expect(reset.message).toBe('download failed: socket hang up');
  });
});
