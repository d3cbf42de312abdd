// A consumer of the receiver's RabbitMQ forwards (docs/forwarding.md, "Consumers"). Start it
// first: it declares the exchange and a queue bound to it (the service declares neither; a
// message to a missing exchange, or one no queue takes, is retried, not dropped), and prints the
// FORWARD_URLS entry to start the service with.
//
//   node examples/consumers/amqp-consumer.mjs
//
// AMQP_URL (amqp://guest:guest@127.0.0.1:5672), EXCHANGE, QUEUE and ROUTING_KEY (stored) name what
// it uses. The exchange's and the queue's defaults end in a tag made for this run
// (audio-example-<tag>, audio-indexer-<tag>): two runs on one broker never share a queue.
// Nothing it declares outlives it, however it ends: the queue is exclusive (the broker deletes it
// with this connection) and an exchange it declares is auto-delete (gone with its last binding);
// an exchange that was there before is used as it is. A consumer of your own declares a durable
// queue instead, so that messages wait for it while it is down. Each message's trace is
// continued (tracing.mjs): its trace id is printed, and with OTEL_EXPORTER_OTLP_ENDPOINT set its
// span exported.
import { randomBytes } from 'node:crypto';
import process from 'node:process';
import { connect } from 'amqplib';
import { startTracing } from './tracing.mjs';

const tag = randomBytes(4).toString('hex');
const url = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const exchange = process.env.EXCHANGE ?? `audio-example-${tag}`;
const queueName = process.env.QUEUE ?? `audio-indexer-${tag}`;
const routingKey = process.env.ROUTING_KEY ?? 'stored';

const tracing = await startTracing('amqp-consumer');
const connection = await connect(url);
// The broker closes a channel that asks for an exchange it lacks: asked on one of its own.
const probe = await connection.createChannel();
probe.on('error', () => {});
const existed = await probe.checkExchange(exchange).then(
  () => true,
  () => false,
);
if (existed) await probe.close();
const channel = await connection.createChannel();
if (!existed)
  await channel.assertExchange(exchange, 'direct', { durable: false, autoDelete: true });
const { queue } = await channel.assertQueue(queueName, { exclusive: true });
await channel.bindQueue(queue, exchange, routingKey);
await channel.consume(queue, (m) => {
  if (m === null) return;
  const message = JSON.parse(m.content.toString('utf8'));
  const traceparent = m.properties.headers?.traceparent;
  void tracing.consume('consume audio-webhooks forward', traceparent, async (traceId) => {
    // At least once: dedupe on messageId (the same id for a retry and a replay) in your database.
    process.stdout.write(
      `${m.properties.messageId} ${message.type} ${message.id} ${message.stored?.name ?? '-'} ${traceId}\n`,
    );
    channel.ack(m);
  });
});
// The URL's credentials stay out of what is printed.
process.stdout.write(
  `amqp-consumer: reading queue ${queue} (exchange ${exchange}, key ${routingKey}); start the service with FORWARD_URLS='<AMQP_URL>/?exchange=${exchange}&routing_key=${routingKey}'\n`,
);
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    void connection.close().then(() => tracing.shutdown());
  });
}
