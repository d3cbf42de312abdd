import { randomUUID } from 'node:crypto';
import type { Express, RequestHandler, Response } from 'express';
import helmet from 'helmet';
import type { Logger } from 'pino';

const REQUEST_ID = /^[\w\-.:]{1,128}$/;

/** Fields a route wants on the request's one log line (set on `res.locals.logFields`). */
export function addLogFields(res: Response, fields: Record<string, unknown>): void {
  res.locals.logFields = { ...res.locals.logFields, ...fields };
}

/** The load balancer's and Prometheus's polls: logged at debug, or they drown everything else. */
const PROBES = new Set(['/healthz', '/readyz', '/metrics']);

declare module 'express-serve-static-core' {
  interface Locals {
    /** This request's id (the load balancer's X-Request-Id when sane, else a new UUID). */
    requestId?: string;
    /** Facts a route adds to the request's log line (addLogFields). */
    logFields?: Record<string, unknown>;
  }
}

/**
 * Settings and middleware every request passes through: security headers, no `x-powered-by`, no
 * ETag (a hash of every webhook answer, for clients that never revalidate), and one log line
 * per request. The benchmark's empty baseline uses this same function, so the two compare fairly.
 */
export function applyCommonMiddleware(app: Express, logger: Logger): void {
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(helmet());
  app.use(requestLog(logger));
}

/**
 * One line per request when it ends: `{req: {id, method, url, remoteAddress}, res: {statusCode},
 * responseTime, ...the route's fields}`, the shape pino-http writes. Written here rather than with
 * pino-http, whose per-request child logger and listeners cost 14 % of the receiver's CPU in a
 * profile (docs/performance.md); this costs one object and one write, and nothing for a probe
 * below the log level.
 */
function requestLog(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const started = performance.now();
    const incoming = req.headers['x-request-id'];
    // Keep the load balancer's request id when it sent a sane one, so logs join up.
    const id = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    res.setHeader('X-Request-Id', id);
    res.locals.requestId = id;
    const url = req.originalUrl;
    const write = (msg: string, level: 'debug' | 'info' | 'warn' | 'error') => {
      if (!logger.isLevelEnabled(level)) return;
      logger[level](
        {
          req: { id, method: req.method, url, remoteAddress: req.socket.remoteAddress },
          res: { statusCode: res.statusCode },
          responseTime: Math.round(performance.now() - started),
          ...res.locals.logFields,
        },
        msg,
      );
    };
    res.once('finish', () => {
      const level = res.statusCode >= 500 ? 'error' : PROBES.has(url) ? 'debug' : 'info';
      write('request completed', level);
    });
    res.once('close', () => {
      if (!res.writableFinished) write('request aborted', 'warn');
    });
    next();
  };
}
