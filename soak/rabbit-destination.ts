import { randomUUID } from 'node:crypto';
import { connect, type Channel, type ChannelModel } from 'amqplib';
import type { ForwardedMessage } from './observations.js';
import { messageOf } from './received-message.js';

/**
 * The RabbitMQ destination on the machine's broker (5672, guest): an exchange and a queue of the
 * run's own, and a consumer that keeps what arrives. The broker itself serves others and is never
 * stopped; its fault is the destination's exchange removed (publishes are refused, 404) and then
 * declared and bound again (until the binding is back a publish is returned, `mandatory`).
 */
export interface RabbitDestination {
  readonly url: string;
  readonly received: ForwardedMessage[];
  removeExchange(): Promise<void>;
  restoreExchange(): Promise<void>;
  /** Takes what is still queued (had the consumer been cancelled) into `received`. */
  takeRest(): Promise<void>;
  close(): Promise<void>;
}

const ROUTING_KEY = 'stored';

export async function startRabbitDestination(): Promise<RabbitDestination> {
  const name = `soak-${randomUUID()}`;
  const model: ChannelModel = await connect('amqp://guest:guest@127.0.0.1:5672');
  model.on('error', () => undefined);
  const channel: Channel = await model.createChannel();
  // Changes to the exchange on a channel of their own, each: a refused one closes its channel,
  // and must not take the consumer's with it.
  const onItsOwn = async (change: (admin: Channel) => Promise<unknown>) => {
    const admin = await model.createChannel();
    admin.on('error', () => undefined);
    try {
      await change(admin);
    } finally {
      await admin.close().catch(() => undefined);
    }
  };
  const declare = () =>
    onItsOwn(async (admin) => {
      await admin.assertExchange(name, 'direct', { durable: true, autoDelete: false });
      await admin.bindQueue(name, name, ROUTING_KEY);
    });
  await channel.assertQueue(name, { durable: true, autoDelete: false });
  await declare();
  const received: ForwardedMessage[] = [];
  await channel.consume(
    name,
    (message) => {
      if (message === null) return;
      received.push(
        messageOf(String(message.properties.messageId), message.content.toString('utf8')),
      );
    },
    { noAck: true },
  );
  return {
    url: `amqp://guest:guest@127.0.0.1:5672/?exchange=${name}&routing_key=${ROUTING_KEY}`,
    received,
    removeExchange: () => onItsOwn((admin) => admin.deleteExchange(name)),
    takeRest: () =>
      onItsOwn(async (admin) => {
        for (let i = 0; i < 1_000_000; i += 1) {
          const message = await admin.get(name, { noAck: true });
          if (message === false) return;
          received.push(
            messageOf(String(message.properties.messageId), message.content.toString('utf8')),
          );
        }
      }),
    restoreExchange: declare,
    async close() {
      await channel.deleteQueue(name).catch(() => undefined);
      await channel.deleteExchange(name).catch(() => undefined);
      await model.close().catch(() => undefined);
    },
  };
}
