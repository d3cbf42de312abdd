import { randomUUID } from 'node:crypto';
import type { Express, Response } from 'express';
import helmet from 'helmet';
import type { Logger } from 'pino';
import { pinoHttp } from 'pino-http';

const REQUEST_ID = /^[\w\-.:]{1,128}$/;

/** Fields a route wants on the request's one log line (set on `res.locals.logFields`). */
export function addLogFields(res: Response, fields: Record<string, unknown>): void {
  res.locals.logFields = {
    ...(res.locals.logFields as Record<string, unknown> | undefined),
    ...fields,
  };
}

/** The load balancer's and Prometheus's polls: logged at debug, or they drown everything else. */
const PROBES = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * Settings and middleware every request passes through: security headers, no `x-powered-by`, no
 * ETag (a hash of every webhook answer, for clients that never revalidate), and one log line
 * per request. The benchmark's empty baseline uses this same function, so the two compare fairly.
 */
export function applyCommonMiddleware(app: Express, logger: Logger): void {
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(helmet());
  app.use(
    pinoHttp({
      logger,
      // Keep the load balancer's request id when it sent a sane one, so logs join up.
      genReqId: (req, res) => {
        const incoming = req.headers['x-request-id'];
        const id =
          typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
        res.setHeader('X-Request-Id', id);
        return id;
      },
      customLogLevel: (req, res, error) => {
        if (error !== undefined || res.statusCode >= 500) return 'error';
        return PROBES.has(req.url) ? 'debug' : 'info';
      },
      // Lean lines: no header dump (the signature is redacted anyway), cheaper on the hot path.
      serializers: {
        req: (req: { id: unknown; method: string; url: string; remoteAddress?: string }) => ({
          id: req.id,
          method: req.method,
          url: req.url,
          remoteAddress: req.remoteAddress,
        }),
        res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
      },
      // The route's own facts (event, id, job, duplicate) ride on the same line: one write each.
      customSuccessObject: (_req, res, value: Record<string, unknown>) => {
        const fields = (res as Response).locals.logFields as Record<string, unknown> | undefined;
        return fields ? { ...value, ...fields } : value;
      },
    }),
  );
}
