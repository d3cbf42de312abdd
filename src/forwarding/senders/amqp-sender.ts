import { randomUUID } from 'node:crypto';
import { connect, type ChannelModel, type ConfirmChannel, type Message } from 'amqplib';
import { withDeadline } from '../../util/deadline.js';
import { ForwardError, PermanentForwardError, type Sender } from './sender.js';

/** The header a returned message is known by: each publish's own, whatever its message-id. */
const PUBLISH_HEADER = 'x-audio-webhooks-publish';

/** A confirm channel, and the broker's reason once it closed it (set before the confirms fail). */
interface OpenChannel {
  readonly channel: ConfirmChannel;
  closedBy: unknown;
}

/**
 * Publishes each message to RabbitMQ (amqplib) on a confirm channel: persistent, `message-id`
 * set to its id, and `mandatory`, so a message no queue is bound to take comes back (basic.return,
 * sent before the broker's ack) and counts as not taken instead of vanishing.
 *
 * One connection per destination, opened on the first message and kept until the broker or
 * `close()` ends it. The broker closes the channel, not the connection, on a refused publish (a
 * missing exchange, a message over `max_message_size`): the next message opens a new channel on the
 * same connection. Reconnecting instead left one connection per failure open for good (10 sends
 * to a missing exchange, 10 connections to 5672, still there after `close()`).
 */
export function createAmqpSender(
  url: URL,
  exchange: string,
  routingKey: string,
  timeoutMs: number,
): Sender {
  const returned = new Set<string>();
  let closed = false;
  let connection: Promise<ChannelModel> | undefined;
  let channel: Promise<OpenChannel> | undefined;

  const connected = (): Promise<ChannelModel> => {
    if (closed) return Promise.reject(new ForwardError('the sender is closed'));
    if (connection !== undefined) return connection;
    const opening: Promise<ChannelModel> = connect(
      {
        protocol: url.protocol.slice(0, -1),
        hostname: url.hostname,
        port: Number(url.port || (url.protocol === 'amqps:' ? 5671 : 5672)),
        username: decodeURIComponent(url.username) || 'guest',
        password: decodeURIComponent(url.password) || 'guest',
        vhost: decodeURIComponent(url.pathname.slice(1)) || '/',
        heartbeat: 30,
      },
      // amqplib destroys the socket itself when this runs out before the broker answers.
      { timeout: timeoutMs },
    ).then(
      (model) => {
        // An 'error' without a listener would be thrown; its 'close' follows, and the sends
        // waiting on its channel fail with "channel closed". The next send connects again.
        model.on('error', () => undefined);
        model.on('close', () => {
          if (connection !== opening) return;
          connection = undefined;
          channel = undefined;
        });
        return model;
      },
      (error: unknown) => {
        if (connection === opening) connection = undefined;
        throw new ForwardError(`cannot connect: ${String(error)}`, { cause: error });
      },
    );
    connection = opening;
    return opening;
  };

  const openChannel = async (): Promise<OpenChannel> => {
    const model = await connected();
    if (channel !== undefined) return channel;
    const opening: Promise<OpenChannel> = model.createConfirmChannel().then(
      (confirm) => {
        const open: OpenChannel = { channel: confirm, closedBy: undefined };
        confirm.on('error', (error: unknown) => {
          open.closedBy = error;
        });
        confirm.on('close', () => {
          if (channel === opening) channel = undefined;
        });
        confirm.on('return', (message: Message) => {
          const tag: unknown = message.properties.headers?.[PUBLISH_HEADER];
          if (typeof tag === 'string') returned.add(tag);
        });
        return open;
      },
      (error: unknown) => {
        if (channel === opening) channel = undefined;
        throw new ForwardError(`cannot open a channel: ${String(error)}`, { cause: error });
      },
    );
    channel = opening;
    return opening;
  };

  /** What a publish's failure means: the broker's reason for closing the channel, if it gave one. */
  const refusal = (open: OpenChannel, error: unknown, bytes: number): ForwardError => {
    const reason = open.closedBy ?? error;
    const text = reason instanceof Error ? reason.message : 'nacked by the broker';
    const code = (reason as { code?: unknown } | undefined)?.code;
    // 406 also closes a channel for other preconditions; only the size one can never pass, and
    // only for the message over the size: the others in flight on that channel were dropped
    // with it and go again on a new one.
    const max = /larger than configured max size (\d+)/i.exec(text)?.[1];
    if (code === 406 && max !== undefined && bytes > Number(max))
      return new PermanentForwardError(
        `a message of ${bytes} bytes is over the broker's max_message_size of ${max} bytes`,
        { cause: reason },
      );
    // A missing exchange stays transient: an operator may declare it before the next attempt.
    if (code === 404) return new ForwardError(`exchange not found: ${text}`, { cause: reason });
    return new ForwardError(`not confirmed: ${text}`, { cause: reason });
  };

  return {
    async send({ id, body, traceparent }, signal) {
      const open = await withDeadline(openChannel(), signal, 'connecting');
      const content = Buffer.from(body);
      const tag = randomUUID();
      const confirmed = new Promise<void>((resolve, reject) => {
        open.channel.publish(
          exchange,
          routingKey,
          content,
          {
            persistent: true,
            mandatory: true,
            messageId: id,
            contentType: 'application/json',
            timestamp: Math.floor(Date.now() / 1000),
            headers: { [PUBLISH_HEADER]: tag, traceparent },
          },
          (error: unknown) => {
            if (error) reject(refusal(open, error, content.length));
            else if (returned.delete(tag))
              reject(new ForwardError(`no queue is bound to take routing key "${routingKey}"`));
            else resolve();
          },
        );
      }).catch((error: unknown) => {
        // publish() itself throws once the channel is closed (between opening and now).
        throw error instanceof ForwardError ? error : refusal(open, error, content.length);
      });
      try {
        await withDeadline(confirmed, signal, 'waiting for the confirm');
      } finally {
        returned.delete(tag);
      }
    },
    async close() {
      closed = true;
      const model = await connection?.catch(() => undefined);
      // Closing a connection the broker already closed throws "Connection closed": nothing left.
      await model?.close().catch(() => undefined);
    },
  };
}
