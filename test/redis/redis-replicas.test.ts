import { Redis } from 'ioredis';
import request from 'supertest';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';
import {
  startPrivateRedis,
  startPrivateSentinel,
  type PrivateRedis,
} from '../../harness/private-redis';
import { eventually } from '../../harness/sandbox-process';
import { createTestReceiver, signed, type TestReceiver } from '../helpers/test-receiver';

// A primary with a replica of the tests' own (they are stopped and frozen on purpose).
let primary: PrivateRedis;
let replica: PrivateRedis;
let receiver: TestReceiver | undefined;

beforeAll(async () => {
  primary = await startPrivateRedis();
  replica = await startPrivateRedis({ args: ['--replicaof', '127.0.0.1', String(primary.port)] });
  const redis = new Redis(primary.url);
  await eventually(async () => {
    const info = await redis.info('replication');
    return /connected_slaves:1/.test(info) && /state=online/.test(info) ? true : undefined;
  });
  redis.disconnect();
});
afterEach(async () => {
  await receiver?.close();
  receiver = undefined;
});
afterAll(async () => {
  await replica.stop();
  await primary.stop();
});

function post(app: TestReceiver['listener'], body: unknown) {
  const { raw, headers } = signed(body);
  return request(app).post('/webhooks').set(headers).send(raw);
}

describe('REDIS_WAIT_REPLICAS', () => {
  it('answers 2xx once a replica acknowledged; concurrent requests share their WAITs', async () => {
    receiver = await createTestReceiver({
      REDIS_URL: primary.url,
      REDIS_WAIT_REPLICAS: '1',
      // Generous: the point is sharing. It bounds the whole store of each delivery, which 200 at
      // once in this one process stretch on a loaded 2-core machine.
      REDIS_WAIT_TIMEOUT_MS: '15000',
    });
    const redis = new Redis(primary.url);
    try {
      await redis.config('RESETSTAT');
      const answers = await Promise.all(
        Array.from({ length: 200 }, () => post(receiver!.app, sampleDelivery('audio.failed'))),
      );
      expect(answers.map((res) => res.status)).toEqual(Array(200).fill(202));
      const stats = await redis.info('commandstats');
      const waits = Number(/cmdstat_wait:calls=(\d+)/.exec(stats)?.[1]);
      expect(waits).toBeGreaterThan(0);
      expect(waits).toBeLessThan(200);
    } finally {
      redis.disconnect();
    }
  });

  it('no acknowledgement in time: 503; the retry, once the replica is back, is a duplicate', async () => {
    receiver = await createTestReceiver({
      REDIS_URL: primary.url,
      REDIS_WAIT_REPLICAS: '1',
      REDIS_WAIT_TIMEOUT_MS: '300',
    });
    const delivery = sampleDelivery('key.revoked');
    replica.freeze();
    try {
      const res = await post(receiver.listener, delivery);
      expect(res.status).toBe(503);
      expect(res.headers['retry-after']).toMatch(/^\d+$/);
    } finally {
      replica.thaw();
    }
    // The write reached the primary: the provider's retry is recognised, not stored twice.
    const again = await post(receiver.listener, delivery);
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ received: true, duplicate: true });
  });
});

describe('REDIS_SENTINELS', () => {
  it("finds the primary through a Sentinel; INTERNAL_PORT's /readyz names it", async () => {
    const sentinel = await startPrivateSentinel(primary.port);
    try {
      receiver = await createTestReceiver({
        REDIS_URL: 'redis://127.0.0.1:1', // only credentials would come from here
        REDIS_SENTINELS: `127.0.0.1:${sentinel.port}`,
        INTERNAL_PORT: '9464',
      });
      await post(receiver.listener, sampleDelivery('key.revoked')).expect(202);
      if (receiver.internal === undefined) throw new Error('INTERNAL_PORT builds an internal app');
      const ready = await request(receiver.internal).get('/readyz').expect(200);
      expect(ready.body).toEqual({
        status: 'ready',
        redis: { topology: 'sentinel', primary: `127.0.0.1:${primary.port}` },
      });
    } finally {
      await receiver?.close();
      receiver = undefined;
      await sentinel.stop();
    }
  });
});
