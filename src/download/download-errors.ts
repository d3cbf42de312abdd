import { NeverRetryError } from '../jobs/retry-policy.js';

/** Retrying cannot help (404, origin not allowed, too large, wrong type): the job fails at once. */
export class PermanentDownloadError extends NeverRetryError {
  override name = 'PermanentDownloadError';
}

/** Worth another attempt (network, timeout, 408, 429, 5xx); `retryAfterMs` is the server's ask. */
export class TransientDownloadError extends Error {
  override name = 'TransientDownloadError';
  constructor(
    message: string,
    readonly retryAfterMs?: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** The connection would reach a private or special address. */
export class BlockedAddressError extends PermanentDownloadError {
  override name = 'BlockedAddressError';
  constructor(host: string, address: string | undefined) {
    super(
      `${host} resolves to ${address ?? 'no address'}, which is not public; refused ` +
        '(set DOWNLOAD_ALLOW_PRIVATE_IPS=true only for local development)',
    );
  }
}
