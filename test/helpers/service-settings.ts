import { randomUUID } from 'node:crypto';

export const TEST_SECRET = 'whsec_test_secret';

/**
 * A service's settings in a test, spawned (spawnService) or built in-process (testConfig): the
 * test Redis under a queue prefix of its own, the test's signing secret, loopback only.
 * `overrides` change any of them or add others (a role's, below).
 */
export function serviceSettings(overrides: Record<string, string> = {}): Record<string, string> {
  return {
    WEBHOOK_SECRETS: TEST_SECRET,
    REDIS_URL: process.env.REDIS_URL ?? '',
    QUEUE_PREFIX: `test-${randomUUID()}`,
    HOST: '127.0.0.1',
    ...overrides,
  };
}

/**
 * ROLE=web as one process on `port`: one receiver, so its logs and its pid are the receiver's
 * (WEB_CONCURRENCY's own tests set more).
 */
export function webOn(port: number): Record<string, string> {
  return { ROLE: 'web', WEB_CONCURRENCY: '1', PORT: String(port) };
}

/**
 * Downloads from a CDN the test runs on this machine: its origin allowed although private, and
 * its CA trusted when it serves HTTPS.
 */
export function downloadsFrom(origin: string, caFile?: string): Record<string, string> {
  return {
    CDN_URL: origin,
    DOWNLOAD_ALLOW_PRIVATE_IPS: 'true',
    ...(caFile === undefined ? {} : { DOWNLOAD_CA_FILE: caFile }),
  };
}
