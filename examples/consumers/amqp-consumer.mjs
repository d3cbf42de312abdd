// A consumer of the receiver's RabbitMQ forwards (docs/forwarding.md, "Consumers"). Start it
// first: it declares the exchange and a queue bound to it (the service declares neither; a
// message to a missing exchange, or one no queue takes, is retried, not dropped). Then start the
// service with FORWARD_URLS='amqp://guest:guest@127.0.0.1:5672/?exchange=audio&routing_key=stored'.
//
//   node examples/consumers/amqp-consumer.mjs
//
// AMQP_URL (amqp://guest:guest@127.0.0.1:5672), EXCHANGE (audio), QUEUE (audio-indexer) and
// ROUTING_KEY (stored) name what it uses.
import process from 'node:process';
import { connect } from 'amqplib';

const url = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const exchange = process.env.EXCHANGE ?? 'audio';
const queueName = process.env.QUEUE ?? 'audio-indexer';
const routingKey = process.env.ROUTING_KEY ?? 'stored';

const connection = await connect(url);
const channel = await connection.createChannel();
await channel.assertExchange(exchange, 'direct', { durable: true });
const { queue } = await channel.assertQueue(queueName, { durable: true });
await channel.bindQueue(queue, exchange, routingKey);
await channel.consume(queue, (m) => {
  if (m === null) return;
  const message = JSON.parse(m.content.toString('utf8'));
  // At least once: dedupe on messageId (the same id for a retry and a replay) in your database.
  process.stdout.write(
    `${m.properties.messageId} ${message.type} ${message.id} ${message.stored?.name ?? '-'}\n`,
  );
  channel.ack(m);
});
process.stdout.write(
  `amqp-consumer: reading queue ${queue} (exchange ${exchange}, key ${routingKey})\n`,
);
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    void connection.close();
  });
}
