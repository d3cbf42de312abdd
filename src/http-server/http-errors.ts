/**
 * Operational errors of the HTTP side, one class per kind, each carrying the status it maps to.
 * The one error handler (error-handler.ts) turns them into `{"detail": "…"}`.
 */
export class HttpError extends Error {
  override name = 'HttpError';
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly headers: Readonly<Record<string, string>> = {},
    options?: ErrorOptions,
  ) {
    super(detail, options);
  }
}

export class BadRequestError extends HttpError {
  override name = 'BadRequestError';
  constructor(detail: string) {
    super(400, detail);
  }
}

export class SignatureError extends HttpError {
  override name = 'SignatureError';
  constructor(
    readonly reason: string,
    detail: string,
  ) {
    super(401, detail);
  }
}

export class MethodNotAllowedError extends HttpError {
  override name = 'MethodNotAllowedError';
  constructor(allow: string) {
    super(405, `method not allowed; use ${allow}`, { Allow: allow });
  }
}

export class PayloadTooLargeError extends HttpError {
  override name = 'PayloadTooLargeError';
  constructor(limit: number) {
    // Close the connection: the rest of an oversized body is not worth reading.
    super(413, `body larger than ${limit} bytes`, { Connection: 'close' });
  }
}

export class UnsupportedMediaTypeError extends HttpError {
  override name = 'UnsupportedMediaTypeError';
  constructor() {
    super(415, 'Content-Type must be application/json');
  }
}

/** Redis could not store the delivery; the sender retries (docs/provider.md, "Retries"), so ask it to come back. */
export class ServiceUnavailableError extends HttpError {
  override name = 'ServiceUnavailableError';
  constructor(detail: string, retryAfterSeconds: number, cause?: unknown) {
    super(503, detail, { 'Retry-After': String(retryAfterSeconds) }, { cause });
  }
}
