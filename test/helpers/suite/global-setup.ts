import { execFileSync } from 'node:child_process';
import { Redis } from 'ioredis';
import { checkoutLeftovers } from './checkout-guard';
import {
  HOW_TO_PROVIDE_REDIS,
  startPrivateRedis,
  type PrivateRedis,
} from '../../../harness/private-redis';

declare global {
  var privateRedis: PrivateRedis | undefined;
  var checkoutBefore: string[] | undefined;
}

/** REDIS_URL when set and answering; else a private redis-server; else a clear error. */
export async function provideRedis(): Promise<void> {
  const given = process.env.REDIS_URL;
  if (given) {
    const redis = new Redis(given, {
      lazyConnect: true,
      connectTimeout: 2000,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    try {
      await redis.connect();
      await redis.ping();
    } catch (error: unknown) {
      throw new Error(`REDIS_URL=${given} does not answer; ${HOW_TO_PROVIDE_REDIS}`, {
        cause: error,
      });
    } finally {
      // As src/redis/connections.ts dropConnection (global setup runs outside Jest's module
      // mapper, so it cannot import src/): disconnecting an ended client arms a 2 s timer.
      if (redis.status !== 'end') redis.disconnect();
    }
    return;
  }
  globalThis.privateRedis = await startPrivateRedis();
  process.env.REDIS_URL = globalThis.privateRedis.url;
}

/**
 * Once per `npm test`: Redis first, so a missing Redis fails at once with how to provide it; then
 * bring dist/ up to date (the shutdown and crash tests run the real `node dist/main.js`) as
 * `npm start` does: only what changed since the last build, rather than a whole build every run.
 * Workers inherit process.env, REDIS_URL included.
 */
export default async function globalSetup(): Promise<void> {
  // The AWS SDK's nine-line notice on Node < 22, once per test process that makes a client: the
  // service turns it into one start-up log line (s3-client.ts); the tests need neither.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  globalThis.checkoutBefore = checkoutLeftovers();
  await provideRedis();
  try {
    execFileSync(process.execPath, ['scripts/build-current.js'], { stdio: 'inherit' });
  } catch (error: unknown) {
    // Jest runs no teardown after a failed setup: the private Redis would outlive the run.
    await globalThis.privateRedis?.stop();
    throw error;
  }
}
