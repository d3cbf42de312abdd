import type { ErrorRequestHandler, RequestHandler } from 'express';
import { HttpError } from './http-errors.js';

/** Unmatched paths get the same JSON error shape as everything else. */
export const notFound: RequestHandler = (_req, res) => {
  res.status(404).json({ detail: 'not found' });
};

/**
 * The one error handler: every error body is `{"detail": "…"}`, the shape the provider itself uses.
 * Unexpected errors are logged with their stack and answered without internals.
 */
// Express recognises an error handler by its four parameters, so `_next` must stay.
export const errorHandler: ErrorRequestHandler = (error: unknown, req, res, _next) => {
  if (error instanceof HttpError) {
    const level = error.status >= 500 ? 'error' : 'info';
    req.log[level]({ err: error.cause ?? error, status: error.status }, error.detail);
    if (!res.headersSent)
      res.set(error.headers).status(error.status).json({ detail: error.detail });
    return;
  }
  req.log.error({ err: error }, 'unhandled error');
  if (!res.headersSent) res.status(500).json({ detail: 'internal error' });
};
