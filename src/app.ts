import type { RequestListener } from 'node:http';
import express, { type Express } from 'express';
import { topologyOf, type RedisConnection } from './redis/connections.js';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import { adminDashboard } from './http/admin-dashboard.js';
import {
  applyCommonMiddleware,
  setSecurityHeaders,
  startRequestLog,
} from './http/common-middleware.js';
import { errorHandler, notFound } from './http/error-handler.js';
import { healthRoutes } from './http/health-routes.js';
import { MethodNotAllowedError } from './http/http-errors.js';
import { webhookRoute, type PlainHandler } from './http/webhook-route.js';
import type { Metrics } from './metrics.js';
import type { DeliveryQueue } from './queue/delivery-queue.js';

export interface AppDeps {
  readonly config: Config;
  readonly logger: Logger;
  readonly queue: DeliveryQueue;
  /** The web side's fail-fast connection (the queue's own); /readyz pings it. */
  readonly redis: RedisConnection;
  readonly metrics: Metrics;
  /** True once shutdown began: /readyz answers 503 so the load balancer stops sending. */
  readonly isShuttingDown?: () => boolean;
  /** Replica acknowledgements (REDIS_WAIT_REPLICAS > 0). */
  readonly confirmReplicas?: () => Promise<number>;
}

/** Builds the Express app without listening, so supertest and the benchmark can use it as is. */
export function createApp(deps: AppDeps): Express {
  return createHttp(deps).app;
}

/** The receiver's request listener alone (see createHttp). */
export function createRequestListener(deps: AppDeps): RequestListener {
  return createHttp(deps).listener;
}

/**
 * The Express app, and what the receiver's HTTP server runs: `listener` sends a POST to exactly
 * WEBHOOK_PATH (the provider's every delivery) straight to the webhook handler, after the same
 * security headers and log line Express's common middleware gives every other request; everything
 * else, including the path's other spellings Express also routes there (a trailing slash, other
 * letter case), goes through `app`. Express's routing and response helpers were a tenth of the
 * receiver's CPU per delivery in a profile (docs/performance.md); the answers are the same bytes
 * either way. Both share one webhook handler.
 */
export function createHttp(deps: AppDeps): { app: Express; listener: RequestListener } {
  const webhook = webhookRoute({ ...deps, isRedisReady: () => deps.redis.status === 'ready' });
  const app = buildApp(deps, webhook);
  const path = deps.config.webhookPath;
  const withQuery = `${path}?`;
  const listener: RequestListener = (req, res) => {
    const url = req.url ?? '';
    if (req.method === 'POST' && (url === path || url.startsWith(withQuery))) {
      setSecurityHeaders(res);
      startRequestLog(deps.logger, req, res);
      webhook(req, res).catch((error: unknown) => {
        // The handler answers its own errors; this is for a defect in that answer itself.
        deps.logger.error({ err: error }, 'unhandled error');
        res.destroy();
      });
      return;
    }
    app(req, res);
  };
  return { app, listener };
}

function buildApp(deps: AppDeps, webhook: PlainHandler): Express {
  const { config, logger, redis } = deps;
  const isShuttingDown = deps.isShuttingDown ?? (() => false);
  const app = express();
  app.set('trust proxy', config.trustProxy);
  applyCommonMiddleware(app, logger);
  // The hot path first: a delivery does not walk past the probes' and the dashboard's routes.
  app.post(config.webhookPath, webhook);
  app.all(config.webhookPath, () => {
    throw new MethodNotAllowedError('POST');
  });
  app.use(
    healthRoutes({ redis, metrics: deps.metrics, isShuttingDown, topology: topologyOf(config) }),
  );
  if (config.adminPassword !== undefined) {
    app.use(
      adminDashboard({
        password: config.adminPassword,
        readOnly: config.adminReadOnly,
        queue: deps.queue,
        logger,
      }),
    );
  }
  app.use(notFound);
  app.use(errorHandler(logger));
  return app;
}
