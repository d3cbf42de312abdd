import { randomUUID } from 'node:crypto';
import type { Express } from 'express';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { createApp } from '../../src/app';
import { loadConfig, type Config } from '../../src/config';
import { createLogger } from '../../src/logger';
import { createMetrics, type Metrics } from '../../src/metrics';
import { createDeliveryQueue, type DeliveryQueue } from '../../src/queue/delivery-queue';
import { createWebRedis } from '../../src/queue/redis-connections';
import { signPayload } from '../../src/webhooks/sign-payload';

export const TEST_SECRET = 'whsec_test_secret';

/** A Config as main.ts builds it, on the test Redis, under a queue prefix of the test's own. */
export function testConfig(env: Record<string, string> = {}): Config {
  return loadConfig({
    WEBHOOK_SECRETS: TEST_SECRET,
    REDIS_URL: process.env.REDIS_URL ?? '',
    QUEUE_PREFIX: `test-${randomUUID()}`,
    LOG_LEVEL: 'silent',
    ...env,
  });
}

export interface TestReceiver {
  readonly app: Express;
  readonly config: Config;
  readonly queue: DeliveryQueue;
  readonly redis: Redis;
  readonly metrics: Metrics;
  /** Deletes every key under the test's prefix and closes the connections. */
  close(): Promise<void>;
}

/** The app exactly as main.ts wires it for ROLE=web, once its Redis connection is ready. */
export async function createTestReceiver(
  env: Record<string, string> = {},
  {
    logger = createLogger('silent'),
    waitForRedis = true,
  }: { logger?: Logger; waitForRedis?: boolean } = {},
): Promise<TestReceiver> {
  const config = testConfig(env);
  const redis = createWebRedis(config.redisUrl);
  redis.on('error', () => undefined);
  const queue = createDeliveryQueue({
    connection: redis,
    prefix: config.queuePrefix,
    attempts: config.downloadAttempts,
    backoffMs: config.downloadBackoffMs,
  });
  queue.on('error', () => undefined);
  // getVersion waits for BullMQ's one-time queue-meta write, so a test starts in steady state.
  if (waitForRedis) await queue.getVersion();
  const metrics = createMetrics(queue);
  const app = createApp({ config, logger, queue, redis, metrics });
  return {
    app,
    config,
    queue,
    redis,
    metrics,
    async close() {
      if (redis.status === 'ready') await deleteKeys(redis, `${config.queuePrefix}:*`);
      await queue.close();
      redis.disconnect();
    },
  };
}

export async function deleteKeys(redis: Redis, pattern: string): Promise<void> {
  for await (const keys of redis.scanStream({ match: pattern, count: 1000 }) as AsyncIterable<
    string[]
  >) {
    if (keys.length > 0) await redis.del(...keys);
  }
}

/** Body and headers of a correctly signed delivery. */
export function signed(body: unknown, options: { secret?: string; timestamp?: number } = {}) {
  const raw = typeof body === 'string' ? body : JSON.stringify(body);
  const signOptions = options.timestamp === undefined ? {} : { timestamp: options.timestamp };
  return {
    raw,
    headers: {
      'content-type': 'application/json',
      'x-service-signature': signPayload(raw, options.secret ?? TEST_SECRET, signOptions),
    },
  };
}
