import { Router } from 'express';
import { Cluster } from 'ioredis';
import type { RedisConnection, Topology } from '../redis/connections.js';
import type { WriteGate } from '../redis/write-gate.js';

export interface HealthDeps {
  readonly redis: RedisConnection;
  /** Not ready while Redis's eviction policy may evict the dedupe marks. */
  readonly gate?: Pick<WriteGate, 'holding' | 'detail'>;
  readonly isShuttingDown: () => boolean;
  readonly topology: Topology;
  /**
   * /readyz names the server the writes go to (the primary, for Sentinel). Only on INTERNAL_PORT:
   * an internal address is nothing to hand whoever can reach the public port.
   */
  readonly namePrimary: boolean;
  /** /metrics: the Prometheus text of the whole receiver; absent, no /metrics on this port. */
  readonly metrics?: { readonly contentType: string; text(): Promise<string> };
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
 * we are not draining (the load balancer's check). /metrics: Prometheus text format. Each answers
 * within a deadline whatever Redis does.
 */
export function healthRoutes({
  redis,
  gate,
  isShuttingDown,
  topology,
  namePrimary,
  metrics,
}: HealthDeps): Router {
  const router = Router();
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    if (isShuttingDown()) {
      res.status(503).json({ detail: 'shutting down' });
      return;
    }
    // The web connection's own command timeout (1 s, no offline queue) bounds this PING.
    const redisUp =
      redis.status === 'ready' &&
      (await redis.ping().then(
        () => true,
        () => false,
      ));
    // Which topology, and (single, Sentinel; internal port only) the server the writes go to:
    // after a failover, the new primary appears here.
    const facts = {
      topology,
      ...(namePrimary ? { primary: redisUp ? attachedTo(redis) : null } : {}),
    };
    // Memory in the reserve or a refused write is no reason to leave the balancer: the route
    // answers 503 with Retry-After itself. A policy that evicts is a setting to fix.
    if (redisUp && gate?.holding === 'eviction_policy')
      res.status(503).json({ detail: gate.detail, redis: facts });
    else if (redisUp) res.json({ status: 'ready', redis: facts });
    else res.status(503).json({ detail: 'Redis unavailable', redis: facts });
  });
  if (metrics !== undefined) {
    router.get('/metrics', async (_req, res) => {
      let text: string;
      try {
        text = await metrics.text();
      } catch (error: unknown) {
        const reason = error instanceof Error ? error.message : String(error);
        res.status(503).json({ detail: `metrics unavailable: ${reason}` });
        return;
      }
      res.type(metrics.contentType).send(text);
    });
  }
  return router;
}
