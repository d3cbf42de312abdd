import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { once } from 'node:events';
import { Redis } from 'ioredis';
import request from 'supertest';
import { deliveryKeys } from '../../src/queue/delivery-keys';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';
import { afterTest } from '../helpers/after-test';
import { freePort } from '../../harness/private-redis';
import { serviceSettings, webOn } from '../helpers/service-settings';
import { spawnService } from '../helpers/spawn-service';
import { startStallingProxy } from '../helpers/servers/stalling-proxy';
import { createTestReceiver, deleteKeys, signed } from '../helpers/test-receiver';

/** POSTs a whole body; resolves with the status, or undefined when no answer came. */
function post(port: number, raw: string, headers: Record<string, string>) {
  const req = http.request({
    port,
    host: '127.0.0.1',
    method: 'POST',
    path: '/webhooks',
    agent: false,
    headers: { ...headers, 'content-length': Buffer.byteLength(raw) },
  });
  req.end(raw);
  return Promise.race([
    once(req, 'response').then(([res]) => {
      (res as http.IncomingMessage).resume();
      return (res as http.IncomingMessage).statusCode;
    }),
    once(req, 'error').then(() => undefined),
  ]);
}

it('SIGTERM while an enqueue stalls on Redis: that request gets a 503, never a 202; the process exits 0; the provider’s retry is then stored once', async () => {
  const proxy = await startStallingProxy(new URL(process.env.REDIS_URL ?? ''));
  const port = await freePort();
  const prefix = `test-${randomUUID()}`;
  const service = spawnService(
    serviceSettings({ REDIS_URL: proxy.url, QUEUE_PREFIX: prefix, ...webOn(port) }),
  );
  await service.receiving();
  // One delivery stored first: the queue's own start-up commands (BullMQ reads the server's
  // version once connected) are then behind it, and the stall below holds the enqueue alone.
  const warm = signed(sampleDelivery('audio.ready', { id: `warm-${randomUUID()}` }));
  expect(await post(port, warm.raw, warm.headers)).toBe(202);

  const id = `stalled-${randomUUID()}`;
  const delivery = sampleDelivery('audio.ready', { id });
  const { raw, headers } = signed(delivery);
  // The enqueue's first command names the delivery's mark: once it is held, the request waits
  // on Redis.
  const stalled = proxy.stall(deliveryKeys(prefix).pairOf('audio.ready', id).mark);
  const answer = post(port, raw, headers);
  await stalled;
  service.child.kill('SIGTERM');
  expect(await answer).toBe(503);
  expect(await service.exited).toBe(0);

  // Redis gets what was held (the add may land after all: a 503 says "maybe stored"), and the
  // provider's retry of the same delivery is then stored exactly once.
  proxy.release();
  const receiver = await createTestReceiver({ QUEUE_PREFIX: prefix });
  const admin = new Redis(process.env.REDIS_URL ?? '');
  afterTest(async () => {
    await receiver.close();
    await deleteKeys(admin, `${prefix}:*`);
    admin.disconnect();
  });
  const retry = () => {
    const resent = signed(delivery);
    return request(receiver.listener).post('/webhooks').set(resent.headers).send(resent.raw);
  };
  expect([200, 202]).toContain((await retry()).status);
  expect((await retry()).status).toBe(200);
  expect(await receiver.queue.getJobCounts('waiting')).toEqual({ waiting: 2 });
}, 60_000);
