import type { Telemetry } from 'bullmq';
import type { RequestListener } from 'node:http';
import type { Express } from 'express';
import type { RedisConnection } from './redis/connections.js';
import type { Logger } from 'pino';
import { createHttp } from './app.js';
import type { Config } from './config.js';
import { createMetrics, type Metrics } from './metrics.js';
import { createDeliveryQueue, type DeliveryQueue } from './queue/delivery-queue.js';
import { boundedJobCounts } from './queue/job-counts.js';
import { createWebRedis, redisTarget } from './redis/connections.js';
import { createReplicaWait } from './redis/replica-wait.js';
import { watchRedis } from './redis/watch-redis.js';
import { clusterMetricsText } from './web/cluster-metrics.js';

export interface Receiver {
  /** The Express app alone (supertest); `listener` is what the server runs. */
  readonly app: Express;
  /** The app behind the webhook's fast path (createHttp). */
  readonly listener: RequestListener;
  /** What INTERNAL_PORT serves (metrics, dashboard, probes); absent when it is unset. */
  readonly internal?: Express;
  readonly queue: DeliveryQueue;
  /** The fail-fast connection the queue and /readyz share. */
  readonly redis: RedisConnection;
  readonly metrics: Metrics;
  /** Closes the queue and the Redis connection (after the HTTP server has stopped). */
  close(): Promise<void>;
}

/**
 * The HTTP half, wired as ROLE=web runs it (main.ts, the tests). It does not wait for Redis: the
 * receiver answers 503 and /readyz says not ready until the connection is up, and it comes up on
 * its own when Redis returns.
 */
export interface ReceiverOptions {
  /** True once shutdown began: /readyz answers 503. */
  readonly isShuttingDown?: () => boolean;
  readonly telemetry?: Telemetry | undefined;
  /** A process of a WEB_CONCURRENCY cluster: /metrics serves the sum over every process. */
  readonly inCluster?: boolean;
}

export function createReceiver(
  config: Config,
  logger: Logger,
  { isShuttingDown, telemetry, inCluster = false }: ReceiverOptions = {},
): Receiver {
  const redis = createWebRedis(config);
  watchRedis(redis, logger, 'web', redisTarget(config));
  const queue = createDeliveryQueue({ connection: redis, prefix: config.queuePrefix, telemetry });
  queue.on('error', (error: unknown) => {
    logger.debug({ err: error }, 'queue error');
  });
  const metrics = createMetrics(boundedJobCounts(queue, redis));
  const confirmReplicas =
    config.redisWaitReplicas > 0
      ? createReplicaWait(redis, config.redisWaitReplicas, config.redisWaitTimeoutMs)
      : undefined;
  const deps = {
    ...(confirmReplicas === undefined ? {} : { confirmReplicas }),
    config,
    logger,
    queue,
    redis,
    metrics,
    ...(isShuttingDown === undefined ? {} : { isShuttingDown }),
    ...(inCluster ? { metricsText: clusterMetricsText(metrics.registry) } : {}),
  };
  return {
    ...createHttp(deps),
    queue,
    redis,
    metrics,
    async close() {
      await queue.close();
      // quit() needs a live connection; during an outage there is nothing left to flush.
      await redis.quit().catch(() => {
        redis.disconnect();
      });
    },
  };
}
