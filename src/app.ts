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
  /**
   * What /metrics serves. Default: this process's registry; in a cluster of receiver processes,
   * the sum over all of them (web/cluster-metrics.ts).
   */
  readonly metricsText?: () => Promise<string>;
}

/** Which doors an app serves: one port for everything, or the public and internal ones apart. */
type Surface = 'all' | 'public' | 'internal';

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
export function createHttp(deps: AppDeps): {
  app: Express;
  listener: RequestListener;
  /** INTERNAL_PORT's app (metrics, dashboard, probes), when INTERNAL_PORT is set. */
  internal?: Express;
} {
  const webhook = webhookRoute({ ...deps, isRedisReady: () => deps.redis.status === 'ready' });
  const split = deps.config.internalPort !== undefined;
  const app = buildApp(deps, webhook, split ? 'public' : 'all');
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
  return split
    ? { app, listener, internal: buildApp(deps, webhook, 'internal') }
    : { app, listener };
}

function buildApp(deps: AppDeps, webhook: PlainHandler, surface: Surface): Express {
  const { config, logger, redis } = deps;
  const isShuttingDown = deps.isShuttingDown ?? (() => false);
  const app = express();
  app.set('trust proxy', config.trustProxy);
  applyCommonMiddleware(app, logger);
  if (surface !== 'internal') {
    // The hot path first: a delivery does not walk past the probes' and the dashboard's routes.
    app.post(config.webhookPath, webhook);
    app.all(config.webhookPath, () => {
      throw new MethodNotAllowedError('POST');
    });
  }
  const { registry } = deps.metrics;
  app.use(
    healthRoutes({
      redis,
      isShuttingDown,
      topology: topologyOf(config),
      namePrimary: surface === 'internal',
      ...(surface === 'public'
        ? {}
        : {
            metrics: {
              contentType: registry.contentType,
              text: deps.metricsText ?? (() => registry.metrics()),
            },
          }),
    }),
  );
  if (config.adminPassword !== undefined && surface !== 'public') {
    app.use(
      adminDashboard({
        password: config.adminPassword,
        readOnly: config.adminReadOnly,
        queue: deps.queue,
        redis,
        prefix: config.queuePrefix,
        logger,
      }),
    );
  }
  app.use(notFound);
  app.use(errorHandler(logger));
  return app;
}
