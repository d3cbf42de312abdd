import { Router } from 'express';
import { Cluster } from 'ioredis';
import type { RedisConnection, Topology } from '../redis/connections.js';
import type { Metrics } from '../metrics.js';

export interface HealthDeps {
  readonly redis: RedisConnection;
  readonly metrics: Metrics;
  readonly isShuttingDown: () => boolean;
  readonly topology: Topology;
}

/** The server this process's connection is attached to: the primary, for Sentinel. */
function attachedTo(redis: RedisConnection): string | null {
  if (redis instanceof Cluster) return null;
  const stream = redis.stream as { remoteAddress?: string; remotePort?: number } | undefined;
  return stream?.remoteAddress === undefined
    ? null
    : `${stream.remoteAddress}:${stream.remotePort ?? ''}`;
}

/**
 * /healthz: the process runs (restart it if not). /readyz: send it traffic — Redis answers and
 * we are not draining (the load balancer's check). /metrics: Prometheus text format.
 */
export function healthRoutes({ redis, metrics, isShuttingDown, topology }: HealthDeps): Router {
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
    // Which topology, and (single, Sentinel) the server the writes go to: after a failover, the
    // new primary appears here.
    const facts = { topology, primary: redisUp ? attachedTo(redis) : null };
    if (redisUp) res.json({ status: 'ready', redis: facts });
    else res.status(503).json({ detail: 'Redis unavailable', redis: facts });
  });
  router.get('/metrics', async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
  return router;
}
