import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { loadConfig, type Config } from '../../src/settings';
import { createLogger } from '../../src/telemetry/logger';
import { createReceiver, type Receiver } from '../../src/receiver/receiver';
import type { CustomEvents } from '../../src/hooks/custom-events';
import { signPayload } from '../../src/provider-spec/signature';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';
import { serviceSettings, TEST_SECRET } from './service-settings';

export { TEST_SECRET } from './service-settings';

/**
 * A Config as main.ts builds it, with a spawned service's test settings (serviceSettings), and
 * with an AUDIO_DIR of its own under the temp folder (the default ./data/audio is the checkout's).
 */
export function testConfig(env: Record<string, string> = {}): Config {
  return loadConfig(
    serviceSettings({
      LOG_LEVEL: 'silent',
      AUDIO_DIR: env.AUDIO_DIR ?? mkdtempSync(join(tmpdir(), 'aw-audio-')),
      ...env,
    }),
  );
}

export interface TestReceiver extends Receiver {
  readonly config: Config;
  /** Deletes every key under the test's prefix, then closes the connections. */
  close(): Promise<void>;
}

/** The receiver exactly as main.ts builds it for ROLE=web, once its Redis connection is ready. */
export async function createTestReceiver(
  env: Record<string, string> = {},
  {
    logger = createLogger('silent'),
    waitForRedis = true,
    customEvents,
  }: { logger?: Logger; waitForRedis?: boolean; customEvents?: CustomEvents } = {},
): Promise<TestReceiver> {
  const config = testConfig(env);
  const receiver = createReceiver(
    config,
    logger,
    customEvents === undefined ? {} : { customEvents },
  );
  // getVersion waits for BullMQ's one-time queue-meta write, so a test starts in steady state.
  if (waitForRedis) await receiver.queue.getVersion();
  return {
    ...receiver,
    config,
    async close() {
      if (receiver.redis.status === 'ready') {
        // The tests' Redis is a single server.
        await deleteKeys(receiver.redis as Redis, `${config.queuePrefix}:*`);
      }
      await receiver.close();
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

/**
 * POSTs a signed key.revoked of `id` to a receiver on `port`, on a connection of its own
 * (`connection: close`), so each request may reach another of the receiver's processes; its status.
 */
export async function postOnNewConnection(port: number, id: string): Promise<number> {
  const { raw, headers } = signed(sampleDelivery('key.revoked', { id }));
  const res = await fetch(`http://127.0.0.1:${port}/webhooks`, {
    method: 'POST',
    headers: { ...headers, connection: 'close' },
    body: raw,
  });
  return res.status;
}
