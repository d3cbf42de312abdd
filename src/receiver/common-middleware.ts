import { randomUUID } from 'node:crypto';
import { IncomingMessage, type RequestListener, type ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import type { Express } from 'express';
import helmet from 'helmet';
import type { Logger } from 'pino';
import type { PlainHandler } from './webhook-route.js';
import { trackRequest } from '../http-server/request-state.js';

const REQUEST_ID = /^[\w\-.:]{1,128}$/;

/** The load balancer's and Prometheus's polls: logged at debug, or they drown everything else. */
const PROBES = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * helmet's headers, computed once. With the options used here every header helmet sets is the
 * same for every request, so they are taken from one run of its middleware and then set as they
 * are: the same headers, without running fourteen middlewares per request.
 */
const SECURITY_HEADERS: readonly (readonly [string, string])[] = (() => {
  const headers = new Map<string, string>();
  const recorder = {
    setHeader: (name: string, value: string) => headers.set(name, value),
    removeHeader: () => undefined,
  };
  const req = new IncomingMessage(new Socket());
  helmet()(req, recorder as unknown as ServerResponse, () => undefined);
  return [...headers];
})();

function setSecurityHeaders(res: ServerResponse): void {
  for (const [name, value] of SECURITY_HEADERS) res.setHeader(name, value);
}

/**
 * Settings and middleware every request passes through: security headers, no `x-powered-by`, no
 * ETag (a hash of every webhook answer, for clients that never revalidate), and one log line
 * per request. The benchmark's empty baseline uses this same function, so the two compare fairly;
 * the webhook route's fast path (webhookFastPath, below) does the same two things itself.
 */
export function applyCommonMiddleware(app: Express, logger: Logger): void {
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use((req, res, next) => {
    setSecurityHeaders(res);
    startRequestLog(logger, req, res);
    next();
  });
}

/**
 * One line per request when it ends: `{req: {id, method, url, remoteAddress}, res: {statusCode},
 * responseTime, ...the route's fields}`, the shape pino-http writes. Written here rather than with
 * pino-http, whose per-request child logger and listeners were a large share of the receiver's
 * CPU in a profile (docs/performance-history.md); this costs one object and one write, and nothing for a probe
 * below the log level.
 */
function startRequestLog(logger: Logger, req: IncomingMessage, res: ServerResponse): void {
  const started = performance.now();
  const incoming = req.headers['x-request-id'];
  // Keep the load balancer's request id when it sent a sane one, so logs join up.
  const id = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
  res.setHeader('X-Request-Id', id);
  const state = trackRequest(res, id);
  const url = req.url ?? '';
  const write = (msg: string, level: 'debug' | 'info' | 'warn' | 'error') => {
    if (!logger.isLevelEnabled(level)) return;
    logger[level](
      {
        req: { id, method: req.method, url, remoteAddress: req.socket.remoteAddress },
        res: { statusCode: res.statusCode },
        responseTime: Math.round(performance.now() - started),
        ...state.fields,
      },
      msg,
    );
  };
  res.once('finish', () => {
    // 503 is an outage's refusal, counted and announced once; each is not an error line.
    const level =
      res.statusCode >= 500 && res.statusCode !== 503
        ? 'error'
        : PROBES.has(url)
          ? 'debug'
          : 'info';
    write('request completed', level);
  });
  res.once('close', () => {
    if (!res.writableFinished) write('request aborted', 'warn');
  });
}

/**
 * The receiver's listener: a POST to exactly WEBHOOK_PATH (a query allowed) goes straight to the
 * webhook's handler, after the security headers and log line every other request gets from
 * applyCommonMiddleware; Express's routing, which costs CPU per delivery
 * (docs/performance-history.md), runs only for the rest.
 */
export function webhookFastPath(
  path: string,
  logger: Logger,
  webhook: PlainHandler,
  app: Express,
): RequestListener {
  const withQuery = `${path}?`;
  return (req, res) => {
    const url = req.url ?? '';
    if (req.method === 'POST' && (url === path || url.startsWith(withQuery))) {
      setSecurityHeaders(res);
      startRequestLog(logger, req, res);
      webhook(req, res).catch((error: unknown) => {
        // The handler answers its own errors; this is for a defect in that answer itself.
        logger.error({ err: error }, 'unhandled error');
        res.destroy();
      });
      return;
    }
    app(req, res);
  };
}
