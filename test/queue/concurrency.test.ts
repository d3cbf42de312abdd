import type { AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:http';
import { Pool } from 'undici';
import { jobItemId } from '../../src/queue/delivery-job-data';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';
import { createTestReceiver, signed, type TestReceiver } from '../helpers/test-receiver';

let receiver: TestReceiver;
let server: Server;
let pool: Pool;

beforeAll(async () => {
  receiver = await createTestReceiver();
  server = createServer(receiver.listener).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  pool = new Pool(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, {
    connections: 100,
  });
});
afterAll(async () => {
  await pool.close();
  server.close();
  await receiver.close();
});

it('1,000 concurrent deliveries of which 100 are duplicates leave exactly 900 jobs', async () => {
  const originals = Array.from({ length: 900 }, (_, i) =>
    sampleDelivery('audio.ready', { id: `item-${i}` }),
  );
  // Every tenth item is delivered twice at the same moment: the race BullMQ's atomic dedupe settles.
  const deliveries = [...originals, ...originals.filter((_, i) => i % 9 === 0)];
  expect(deliveries).toHaveLength(1000);

  const answers = await Promise.all(
    deliveries.map(async (delivery) => {
      const { raw, headers } = signed(delivery);
      const res = await pool.request({ method: 'POST', path: '/webhooks', headers, body: raw });
      return { status: res.statusCode, body: (await res.body.json()) as { duplicate?: boolean } };
    }),
  );

  const count = (status: number) => answers.filter((a) => a.status === status).length;
  expect({
    accepted: count(202),
    duplicates: count(200),
    other: answers.length - count(202) - count(200),
  }).toEqual({
    accepted: 900,
    duplicates: 100,
    other: 0,
  });
  expect(answers.filter((a) => a.body.duplicate === true)).toHaveLength(100);
  expect(await receiver.queue.getJobCounts('waiting')).toEqual({ waiting: 900 });
  const ids = (await receiver.queue.getWaiting(0, -1)).map((job) => jobItemId(job.data));
  expect(new Set(ids)).toEqual(new Set(originals.map((d) => (d.data as { id: string }).id)));
});
