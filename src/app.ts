import express, { type Express } from 'express';
import helmet from 'helmet';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { pinoHttp } from 'pino-http';
import { randomUUID } from 'node:crypto';
import type { Config } from './config.js';
import { errorHandler, notFound } from './http/error-handler.js';
import { healthRoutes } from './http/health-routes.js';
import { MethodNotAllowedError } from './http/http-errors.js';
import { webhookRoute } from './http/webhook-route.js';
import type { Metrics } from './metrics.js';
import type { DeliveryQueue } from './queue/delivery-queue.js';

export interface AppDeps {
  readonly config: Config;
  readonly logger: Logger;
  readonly queue: DeliveryQueue;
  /** The web side's fail-fast connection (the queue's own); /readyz pings it. */
  readonly redis: Redis;
  readonly metrics: Metrics;
  /** True once shutdown began: /readyz answers 503 so the load balancer stops sending. */
  readonly isShuttingDown?: () => boolean;
}

const REQUEST_ID = /^[\w\-.:]{1,128}$/;

/** Builds the Express app without listening, so supertest and the benchmark can use it as is. */
export function createApp(deps: AppDeps): Express {
  const { config, logger, redis } = deps;
  const isShuttingDown = deps.isShuttingDown ?? (() => false);
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', config.trustProxy);
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
      autoLogging: { ignore: (req) => req.url === '/healthz' || req.url === '/readyz' },
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
    }),
  );
  app.use(healthRoutes({ redis, metrics: deps.metrics, isShuttingDown }));
  app.post(
    config.webhookPath,
    webhookRoute({ ...deps, isRedisReady: () => redis.status === 'ready' }),
  );
  app.all(config.webhookPath, () => {
    throw new MethodNotAllowedError('POST');
  });
  app.use(notFound);
  app.use(errorHandler);
  return app;
}
