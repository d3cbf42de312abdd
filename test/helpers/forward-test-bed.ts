import { Redis } from 'ioredis';
import { randomUUID } from 'node:crypto';
import { request } from 'undici';
import { startLocalCdn, type LocalCdn } from '../../harness/local-cdn';
import { serviceSettings } from './service-settings';
import { spawnService, type ServiceProcess } from './spawn-service';
import { deleteKeys, signed } from './test-receiver';
import { accepted, postAsProvider } from './provider-post';

/** What the forwarding test files share: Redis, a CDN, spawned services, cleanups per test. */
export interface ForwardTestBed {
  readonly redis: Redis;
  /** Run in reverse after each test. */
  readonly cleanups: (() => Promise<unknown>)[];
  /** The local CDN, started before the file's tests. */
  readonly cdn: LocalCdn;
  /** A spawned service or worker with the test settings (serviceSettings), stopped after the test. */
  readonly service: (
    env: Record<string, string>,
    options?: Parameters<typeof spawnService>[1],
  ) => ServiceProcess;
  /** A QUEUE_PREFIX of its own, its keys removed after the test. */
  readonly prefixed: () => string;
}

/** Registers the file's hooks (a CDN for all its tests, cleanups after each) and returns the bed. */
export function forwardTestBed(): ForwardTestBed {
  const redis = new Redis(process.env.REDIS_URL ?? '');
  const cleanups: (() => Promise<unknown>)[] = [];
  let cdn: LocalCdn | undefined;
  beforeAll(async () => {
    cdn = await startLocalCdn();
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  afterAll(async () => {
    await cdn?.close();
    redis.disconnect();
  });
  return {
    redis,
    cleanups,
    get cdn() {
      if (cdn === undefined) throw new Error('the CDN starts before the tests');
      return cdn;
    },
    // spawn-service.ts stops it after the test, before the cleanups here run.
    service: (env, options) => spawnService(serviceSettings(env), options),
    prefixed: () => {
      const prefix = `test-${randomUUID()}`;
      cleanups.push(() => deleteKeys(redis, `${prefix}:*`));
      return prefix;
    },
  };
}

/**
 * POSTs a new signed delivery to a spawned receiver as the provider does (a 503 is sent again):
 * 202 once it is taken, whether the first answer or a re-send's duplicate (provider-post.ts).
 */
export async function deliverSigned(port: number, body: unknown): Promise<number> {
  return accepted(await postAsProvider(() => postSigned(port, body)));
}

/** POSTs a signed delivery to a spawned receiver; its status. */
export async function postSigned(port: number, body: unknown): Promise<number> {
  const { raw, headers } = signed(body);
  const answer = await request(`http://127.0.0.1:${port}/webhooks`, {
    method: 'POST',
    headers,
    body: raw,
  });
  await answer.body.dump();
  return answer.statusCode;
}
