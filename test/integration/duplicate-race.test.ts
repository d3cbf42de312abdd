import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { createDeliveryQueue } from '../../src/queue/delivery-queue';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';
import { freePort } from '../../harness/private-redis';
import { spawnService, type ServiceProcess } from '../helpers/spawn-service';
import { deleteKeys, signed, TEST_SECRET } from '../helpers/test-receiver';

/**
 * The provider's re-sends of one delivery may reach two receiver processes at once (two pods
 * behind the balancer): one is accepted, every other is a duplicate, one job exists.
 */
const prefix = `race-${randomUUID()}`;
const redis = new Redis(process.env.REDIS_URL ?? '');
const services: ServiceProcess[] = [];

afterAll(async () => {
  for (const service of services) service.child.kill('SIGKILL');
  await Promise.all(services.map((service) => service.exited));
  await deleteKeys(redis, `${prefix}:*`);
  redis.disconnect();
});

it('the same delivery at two receiver processes at once: one 202, the rest 200 duplicate', async () => {
  const ports = [await freePort(), await freePort()];
  for (const port of ports) {
    const service = spawnService({
      WEBHOOK_SECRETS: TEST_SECRET,
      REDIS_URL: process.env.REDIS_URL ?? '',
      QUEUE_PREFIX: prefix,
      ROLE: 'web',
      WEB_CONCURRENCY: '1',
      HOST: '127.0.0.1',
      PORT: String(port),
    });
    services.push(service);
    await service.receiving();
  }
  for (let round = 0; round < 10; round += 1) {
    const { raw, headers } = signed(sampleDelivery('audio.failed', { id: `race-${round}` }));
    const answers = await Promise.all(
      Array.from({ length: 10 }, async (_, i) => {
        const response = await fetch(`http://127.0.0.1:${ports[i % 2] ?? 0}/webhooks`, {
          method: 'POST',
          headers,
          body: raw,
        });
        return response.status;
      }),
    );
    expect({ round, accepted: answers.filter((s) => s === 202).length }).toEqual({
      round,
      accepted: 1,
    });
    expect(answers.filter((s) => s === 200)).toHaveLength(9);
  }
  const queue = createDeliveryQueue({ connection: redis, prefix });
  try {
    expect(await queue.getJobCounts('wait')).toEqual({ wait: 10 });
  } finally {
    await queue.close();
  }
}, 60_000);
