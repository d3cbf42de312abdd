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
  constructor(detail = 'Content-Type must be application/json') {
    super(415, detail);
  }
}

/** Redis could not store the delivery; the sender retries (docs/provider.md, "Retries"), so ask it to come back. */
export class ServiceUnavailableError extends HttpError {
  override name = 'ServiceUnavailableError';
  constructor(detail: string, retryAfterSeconds: number, cause?: unknown) {
    super(503, detail, { 'Retry-After': String(retryAfterSeconds) }, { cause });
  }
}

/**
 * An HttpError as it is, or a client's mistake that Express's own parts report (the router's percent-decoding of a path
 * parameter, body-parser's limits and charsets) as the error it is, with a detail written here:
 * theirs may quote the request, and theirs carry the body read. Undefined for anything else.
 */
export function clientErrorOf(error: unknown): HttpError | undefined {
  if (error instanceof HttpError) return error;
  if (typeof error !== 'object' || error === null) return undefined;
  const { status, type, limit, charset } = error as Record<string, unknown>;
  if (typeof status !== 'number' || status < 400 || status > 499) return undefined;
  if (error instanceof URIError)
    return new BadRequestError(
      'the path holds a malformed percent-encoding: write a literal % as %25, and other bytes as %XX in UTF-8',
    );
  switch (type) {
    case 'entity.too.large':
      return new PayloadTooLargeError(typeof limit === 'number' ? limit : 0);
    case 'parameters.too.many':
      return new HttpError(413, 'the form has too many fields');
    case 'charset.unsupported':
      return new UnsupportedMediaTypeError(
        `charset ${typeof charset === 'string' ? JSON.stringify(charset) : ''} is not read here: send UTF-8`,
      );
    case 'encoding.unsupported':
      return new UnsupportedMediaTypeError(
        'Content-Encoding is not read here: send the body as it is (identity)',
      );
    default:
      return new HttpError(status, `the request cannot be read (${status})`);
  }
}
