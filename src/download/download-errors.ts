import { UnrecoverableError } from 'bullmq';

/** Retrying cannot help (404, origin not allowed, too large, wrong type): BullMQ fails the job at once. */
export class PermanentDownloadError extends UnrecoverableError {
  constructor(message: string, options?: ErrorOptions) {
    super(message);
    this.name = 'PermanentDownloadError';
    if (options?.cause !== undefined) this.cause = options.cause;
  }
}

/** Worth another attempt (network, timeout, 408, 429, 5xx); `retryAfterMs` is the server's ask. */
export class TransientDownloadError extends Error {
  constructor(
    message: string,
    readonly retryAfterMs?: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'TransientDownloadError';
  }
}

/** The connection would reach a private or special address. */
export class BlockedAddressError extends PermanentDownloadError {
  constructor(host: string, address: string | undefined) {
    super(
      `${host} resolves to ${address ?? 'no address'}, which is not public; refused ` +
        '(set DOWNLOAD_ALLOW_PRIVATE_IPS=true only for local development)',
    );
    this.name = 'BlockedAddressError';
  }
}
