/**
 * Baseline (c), "naive": the common tutorial receiver. `express.raw`, an HMAC compare, then a
 * separate `SET NX` for dedupe and a separate `queue.add`: two Redis round trips per request,
 * each request on its own (no auto-pipelining), and a crash between them loses the delivery.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { Queue } from 'bullmq';
import express from 'express';
import { Redis } from 'ioredis';

const secret = process.env.WEBHOOK_SECRETS ?? '';
const redis = new Redis(process.env.REDIS_URL ?? '', { maxRetriesPerRequest: null });
const queue = new Queue('deliveries', {
  connection: redis,
  prefix: process.env.QUEUE_PREFIX ?? 'naive',
});

const app = express();
app.post('/webhooks', express.raw({ type: 'application/json' }), async (req, res) => {
  const header = req.get('x-service-signature') ?? '';
  const t = /t=(\d+)/.exec(header)?.[1] ?? '';
  const v1 = /v1=([0-9a-f]+)/.exec(header)?.[1] ?? '';
  const expected = createHmac('sha256', secret)
    .update(`${t}.`)
    .update(req.body as Buffer)
    .digest();
  const given = Buffer.from(v1, 'hex');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    res.status(401).json({ detail: 'bad signature' });
    return;
  }
  const event = JSON.parse((req.body as Buffer).toString()) as {
    event: string;
    data: { id: string };
  };
  const fresh = await redis.set(`dedupe:${event.event}:${event.data.id}`, '1', 'EX', 259_200, 'NX');
  if (fresh === null) {
    res.status(200).json({ received: true, duplicate: true });
    return;
  }
  // The body as sent, as the service queues it (the naive worker parses it).
  await queue.add(event.event, { body: (req.body as Buffer).toString() });
  res.status(202).json({ received: true, duplicate: false });
});
app.listen(Number(process.env.PORT), '127.0.0.1', () => process.send?.('listening'));
