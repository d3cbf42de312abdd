import { Router } from 'express';
import type { Redis } from 'ioredis';
import type { Metrics } from '../metrics.js';

export interface HealthDeps {
  readonly redis: Redis;
  readonly metrics: Metrics;
  readonly isShuttingDown: () => boolean;
}

/**
 * /healthz: the process runs (restart it if not). /readyz: send it traffic — Redis answers and
 * we are not draining (the load balancer's check). /metrics: Prometheus text format.
 */
export function healthRoutes({ redis, metrics, isShuttingDown }: HealthDeps): Router {
  const router = Router();
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    if (isShuttingDown()) {
      res.status(503).json({ detail: 'shutting down' });
      return;
    }
    const redisUp =
      redis.status === 'ready' &&
      (await redis.ping().then(
        () => true,
        () => false,
      ));
    if (redisUp) res.json({ status: 'ready' });
    else res.status(503).json({ detail: 'Redis unavailable' });
  });
  router.get('/metrics', async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
  return router;
}
