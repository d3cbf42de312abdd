import { once } from 'node:events';
import request from 'supertest';
import { sampleDelivery } from '../../src/webhooks/sample-delivery';
import { startPrivateRedis, type PrivateRedis } from '../helpers/private-redis';
import { createTestReceiver, signed, type TestReceiver } from '../helpers/test-receiver';

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

function post(app: TestReceiver['app'], body: unknown) {
  const { raw, headers } = signed(body);
  return request(app).post('/webhooks').set(headers).send(raw);
}

/** Time a request takes; the point is "a prompt answer, not a hang", so the bound is loose. */
async function timed<T>(work: () => Promise<T>): Promise<[T, number]> {
  const started = performance.now();
  const result = await work();
  return [result, performance.now() - started];
}

it('answers 503 + Retry-After when Redis is gone, and accepts the same delivery once it is back', async () => {
  receiver = await createTestReceiver({ REDIS_URL: redis.url });
  const { app } = receiver;
  await post(app, sampleDelivery('key.revoked')).expect(202);

  await redis.stop();
  const delivery = sampleDelivery('audio.ready', { id: 'during-outage' });
  const [res, ms] = await timed(() => post(app, delivery));
  expect(res.status).toBe(503);
  expect(res.headers['retry-after']).toMatch(/^\d+$/);
  expect(res.body).toEqual({ detail: expect.any(String) });
  expect(ms).toBeLessThan(2000);
  await request(app).get('/readyz').expect(503);
  await request(app).get('/healthz').expect(200);

  await redis.start();
  if (receiver.redis.status !== 'ready') await once(receiver.redis, 'ready');
  await request(app).get('/readyz').expect(200);
  // Nothing of the refused attempt was stored: the sender's retry is new, not a duplicate.
  await post(app, delivery).expect(202, { received: true, duplicate: false });
  expect(await receiver.queue.getJobCounts('waiting')).toEqual({ waiting: 1 });
});

it('answers 503 within about a second when Redis hangs, never a 2xx', async () => {
  receiver = await createTestReceiver({ REDIS_URL: redis.url });
  redis.freeze();
  try {
    const [res, ms] = await timed(() => post(receiver!.app, sampleDelivery('key.revoked')));
    expect(res.status).toBe(503);
    expect(ms).toBeLessThan(2500);
  } finally {
    redis.thaw();
  }
});

it('starts with Redis down without crashing, reports not ready, and recovers', async () => {
  await redis.stop();
  receiver = await createTestReceiver({ REDIS_URL: redis.url }, { waitForRedis: false });
  const { app } = receiver;
  const [res, ms] = await timed(() => post(app, sampleDelivery('key.revoked')));
  expect(res.status).toBe(503);
  expect(ms).toBeLessThan(2000);
  await request(app).get('/readyz').expect(503, { detail: 'Redis unavailable' });

  await redis.start();
  await once(receiver.redis, 'ready');
  await receiver.queue.waitUntilReady();
  await request(app).get('/readyz').expect(200);
  await post(app, sampleDelivery('key.revoked')).expect(202);
});
