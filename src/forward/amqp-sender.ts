import { randomUUID } from 'node:crypto';
import { connect, type ChannelModel, type ConfirmChannel, type Message } from 'amqplib';
import { abortable, ForwardError, type Sender } from './sender.js';

/** The header a returned message is known by: each publish's own, whatever its message-id. */
const PUBLISH_HEADER = 'x-audio-webhooks-publish';

/**
 * Publishes each message to RabbitMQ (amqplib) on a confirm channel: persistent, `message-id`
 * set to its id, and `mandatory`, so a message no queue is bound to take comes back (basic.return,
 * sent before the broker's ack) and counts as not taken instead of vanishing. One connection and
 * channel per process, opened on the first message and again after either closes (a missing
 * exchange closes the channel; a broker restart, the connection).
 */
export function createAmqpSender(
  url: URL,
  exchange: string,
  routingKey: string,
  timeoutMs: number,
): Sender {
  const returned = new Set<string>();
  let current: Promise<{ model: ChannelModel; channel: ConfirmChannel }> | undefined;
  const forget = () => {
    current = undefined;
  };
  const open = () =>
    (current ??= (async () => {
      const model = await connect(
        {
          protocol: url.protocol.slice(0, -1),
          hostname: url.hostname,
          port: Number(url.port || (url.protocol === 'amqps:' ? 5671 : 5672)),
          username: decodeURIComponent(url.username) || 'guest',
          password: decodeURIComponent(url.password) || 'guest',
          vhost: decodeURIComponent(url.pathname.slice(1)) || '/',
          heartbeat: 30,
        },
        { timeout: timeoutMs },
      );
      // Without listeners these would be thrown; the next send reconnects.
      model.on('error', forget);
      model.on('close', forget);
      try {
        const channel = await model.createConfirmChannel();
        channel.on('error', forget);
        channel.on('close', forget);
        channel.on('return', (message: Message) => {
          const tag: unknown = message.properties.headers?.[PUBLISH_HEADER];
          if (typeof tag === 'string') returned.add(tag);
        });
        return { model, channel };
      } catch (error: unknown) {
        await model.close().catch(() => undefined);
        throw error;
      }
    })().catch((error: unknown) => {
      forget();
      throw new ForwardError(`cannot connect: ${String(error)}`, { cause: error });
    }));
  return {
    async send({ id, body }, signal) {
      const { channel } = await abortable(open(), signal, 'connecting');
      const tag = randomUUID();
      const confirmed = new Promise<void>((resolve, reject) => {
        channel.publish(
          exchange,
          routingKey,
          Buffer.from(body),
          {
            persistent: true,
            mandatory: true,
            messageId: id,
            contentType: 'application/json',
            timestamp: Math.floor(Date.now() / 1000),
            headers: { [PUBLISH_HEADER]: tag },
          },
          (error: unknown) => {
            if (error)
              reject(
                new ForwardError(
                  `not confirmed: ${error instanceof Error ? error.message : 'nacked by the broker'}`,
                ),
              );
            else if (returned.delete(tag))
              reject(new ForwardError(`no queue is bound to take routing key "${routingKey}"`));
            else resolve();
          },
        );
      });
      try {
        await abortable(confirmed, signal, 'waiting for the confirm');
      } finally {
        returned.delete(tag);
      }
    },
    async close() {
      const opened = await current?.catch(() => undefined);
      await opened?.model.close().catch(() => undefined);
    },
  };
}
