import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { Pool } from 'undici';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';
import { startPrivateRedis, whenReady, type PrivateRedis } from '../../harness/private-redis';
import { createTestReceiver, signed, type TestReceiver } from '../helpers/test-receiver';
import { withDeadline } from '../../src/util/deadline';
import { webStoreDeadlineMs } from '../../src/redis/connections';

// These tests stop Redis on purpose, so they always use a private one.
let redis: PrivateRedis;
let receiver: TestReceiver | undefined;

beforeEach(async () => {
  redis = await startPrivateRedis();
});
afterEach(async () => {
  await receiver?.close();
  receiver = undefined;
  await redis.stop();
});

function post(app: TestReceiver['listener'], body: unknown) {
  const { raw, headers } = signed(body);
  return request(app).post('/webhooks').set(headers).send(raw);
}

/**
 * `work`, failing if it has not settled in 10 s: the contract is an answer (the enqueue deadline
 * refuses), not a hang. How soon it comes is the bench's to measure; a loaded 2-core machine
 * stretches any tighter bound.
 */
function answered<T>(work: Promise<T>, what: string): Promise<T> {
  return withDeadline(work, 10_000, what);
}

it('answers 503 + Retry-After when Redis is gone, and accepts the same delivery once it is back', async () => {
  receiver = await createTestReceiver({ REDIS_URL: redis.url });
  const { app } = receiver;
  await post(app, sampleDelivery('key.revoked')).expect(202);

  await redis.stop();
  const delivery = sampleDelivery('audio.ready', { id: 'during-outage' });
  const res = await answered(post(app, delivery), 'a delivery with Redis stopped');
  expect(res.status).toBe(503);
  expect(res.headers['retry-after']).toMatch(/^\d+$/);
  expect(res.body).toEqual({ detail: expect.any(String) });
  await request(app).get('/readyz').expect(503);
  await request(app).get('/healthz').expect(200);

  await redis.start();
  await whenReady(receiver.redis);
  await request(app).get('/readyz').expect(200);
  // Nothing of the refused attempt was stored: the sender's retry is new, not a duplicate.
  await post(app, delivery).expect(202, { received: true, duplicate: false });
  expect(await receiver.queue.getJobCounts('waiting')).toEqual({ waiting: 1 });
});

it('answers 503 when Redis hangs (its enqueue deadline, about a second), never a 2xx', async () => {
  receiver = await createTestReceiver({ REDIS_URL: redis.url });
  redis.freeze();
  try {
    const res = await answered(
      post(receiver.app, sampleDelivery('key.revoked')),
      'a delivery with Redis frozen',
    );
    expect(res.status).toBe(503);
    // The deadline answered, not a hang: the stalled store is in the histogram too: a Redis that hangs must not look healthy.
    const histogram = await receiver.metrics.registry.getSingleMetricAsString(
      'webhook_enqueue_duration_seconds',
    );
    expect(histogram).toMatch(/webhook_enqueue_duration_seconds_count\{result="failed"\} 1$/m);
    // It waited its deadline out before it answered (how long past it is the bench's to measure).
    const sum = /webhook_enqueue_duration_seconds_sum\{result="failed"\} (\S+)$/m.exec(histogram);
    expect(Number(sum?.[1])).toBeGreaterThanOrEqual(
      (0.9 * webStoreDeadlineMs(receiver.config)) / 1000,
    );
  } finally {
    redis.thaw();
  }
});

it('answers 503 when Redis is full (maxmemory, noeviction): storage trouble, not a bad body', async () => {
  receiver = await createTestReceiver({ REDIS_URL: redis.url });
  await receiver.redis.config('SET', 'maxmemory-policy', 'noeviction');
  await receiver.redis.config('SET', 'maxmemory', '1');
  try {
    const res = await post(receiver.listener, sampleDelivery('key.revoked'));
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toMatch(/^\d+$/);
  } finally {
    await receiver.redis.config('SET', 'maxmemory', '0');
  }
});

it('a Redis paused under load: every request in flight gets its 503, none hangs behind the stalled pipeline', async () => {
  receiver = await createTestReceiver({ REDIS_URL: redis.url });
  // One server and a pool of kept-alive connections: supertest starts a server per request, and
  // on a loaded CI that start-up was part of the time measured (1.78 s once, the deadline 1 s).
  const server = createServer(receiver.listener).listen(0, '127.0.0.1');
  await once(server, 'listening');
  const pool = new Pool(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, {
    connections: 100,
  });
  const send = async () => {
    const { raw, headers } = signed(sampleDelivery('audio.failed'));
    const answer = await pool.request({ path: '/webhooks', method: 'POST', headers, body: raw });
    await answer.body.dump();
    return answer.statusCode;
  };
  try {
    // Warm: the scripts are loaded and the connection is in steady state.
    expect(await send()).toBe(202);
    redis.freeze();
    // 100 deliveries arriving over ~500 ms while Redis is stalled: the later ones queue behind
    // the stalled pipeline, which used to stretch their answer to about 2 s.
    const answers = await Promise.all(
      Array.from({ length: 100 }, async (_unused, i) => {
        await new Promise((resolve) => setTimeout(resolve, i * 5));
        return answered(send(), `delivery ${i} with Redis frozen`);
      }),
    );
    expect(answers).toEqual(Array(100).fill(503));
  } finally {
    redis.thaw();
    await pool.close();
    server.close();
  }
});

it('starts with Redis down without crashing, reports not ready, and recovers', async () => {
  await redis.stop();
  receiver = await createTestReceiver({ REDIS_URL: redis.url }, { waitForRedis: false });
  const { app } = receiver;
  const res = await answered(post(app, sampleDelivery('key.revoked')), 'a delivery, Redis down');
  expect(res.status).toBe(503);
  await request(app)
    .get('/readyz')
    .expect(503, { detail: 'Redis unavailable', redis: { topology: 'single' } });

  await redis.start();
  await whenReady(receiver.redis);
  await receiver.queue.waitUntilReady();
  await request(app).get('/readyz').expect(200);
  await post(app, sampleDelivery('key.revoked')).expect(202);
});
