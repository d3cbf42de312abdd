import type { ServerResponse } from 'node:http';
import type { ErrorRequestHandler, RequestHandler } from 'express';
import type { Logger } from 'pino';
import { addLogFields, requestIdOf, sendJson } from './request-state.js';
import { clientErrorOf, HttpError } from './http-errors.js';

/** Unmatched paths get the same JSON error shape as everything else. */
export const notFound: RequestHandler = (_req, res) => {
  res.status(404).json({ detail: 'not found' });
};

/**
 * Every error answer: the body is `{"detail": "…"}`, the shape the provider itself uses. A
 * client's error (4xx, Express's own parts' included: http-errors.ts's clientErrorOf) and a 503
 * are expected: the detail rides on the request's one log line, no stack. Other trouble of ours (5xx) is logged with its cause; unexpected errors are answered
 * without internals.
 */
export function answerError(res: ServerResponse, thrown: unknown, logger: Logger): void {
  const reqId = requestIdOf(res);
  const error = clientErrorOf(thrown) ?? thrown;
  if (error instanceof HttpError) {
    // 503 is an outage the sender retries through: the outage is logged once where it starts
    // (redis/watch-redis.ts) and the refusals counted in /metrics; a stack per refused delivery
    // only buried that one line.
    if (error.status >= 500 && error.status !== 503)
      logger.error({ reqId, err: error.cause ?? error, status: error.status }, error.detail);
    else
      addLogFields(res, {
        detail: error.detail,
        ...(error.cause instanceof Error ? { reason: error.cause.message } : {}),
      });
    if (!res.headersSent)
      sendJson(res, error.status, JSON.stringify({ detail: error.detail }), error.headers);
    return;
  }
  logger.error({ reqId, err: error }, 'unhandled error');
  if (!res.headersSent) sendJson(res, 500, JSON.stringify({ detail: 'internal error' }));
}

/** The one error handler of the Express app. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  // Express recognises an error handler by its four parameters, so `_next` must stay.
  return (error: unknown, _req, res, _next) => {
    answerError(res, error, logger);
  };
}
