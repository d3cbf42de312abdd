/** The provider refused the request for good (a 4xx other than 408/429): its `detail` says why. */
export class ProviderError extends Error {
  override name = 'ProviderError';
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly keyId: string,
  ) {
    super(`provider answered ${status}: ${detail}`);
  }
}

/** Still failing (429, 408, 5xx, network) after every retry. */
export class ProviderUnavailableError extends Error {
  override name = 'ProviderUnavailableError';
}

/** No slot within the caller's deadline: sending now would only earn a 429. */
export class RateLimitDeadlineError extends Error {
  override name = 'RateLimitDeadlineError';
  constructor(
    readonly endpoint: string,
    readonly waitMs: number,
  ) {
    super(`no ${endpoint} slot within the deadline (next in ${waitMs} ms)`);
  }
}

/** Every configured key is revoked (or was refused with 401). */
export class NoKeyLeftError extends Error {
  override name = 'NoKeyLeftError';
  constructor(
    readonly revoked: readonly string[],
    readonly refused: readonly string[],
  ) {
    const parts = [
      revoked.length > 0 ? `revoked: ${revoked.join(', ')}` : '',
      refused.length > 0 ? `refused with 401: ${refused.join(', ')}` : '',
    ].filter(Boolean);
    super(`no API key left (${parts.join('; ')}); add one to PROVIDER_API_KEYS`);
  }
}
