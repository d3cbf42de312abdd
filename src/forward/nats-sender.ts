import { connect, Events, headers, type NatsConnection, type ConnectionOptions } from 'nats';
import { abortable, ForwardError, type Sender } from './sender.js';

/**
 * Publishes each message to JetStream (the official `nats` client) with `Nats-Msg-Id` set to
 * its id, so a stream's duplicate window drops a repeat, and resolves on the stream's PubAck:
 * stored, not just sent. One connection per process, opened on the first message; the client
 * reconnects by itself, and while it is disconnected a send fails at once instead of waiting
 * in the client's buffer (a forward slot held for a down server would delay other
 * destinations). The stream itself is the team's: a subject no stream takes is an error.
 */
export function createNatsSender(url: URL, subject: string, timeoutMs: number): Sender {
  const options: ConnectionOptions = {
    servers: `${url.hostname}:${url.port || '4222'}`,
    name: 'audio-webhooks',
    timeout: timeoutMs,
    reconnect: true,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 1000,
    ...(url.password !== ''
      ? { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) }
      : url.username !== ''
        ? { token: decodeURIComponent(url.username) }
        : {}),
  };
  let current: Promise<{ nc: NatsConnection; connected: () => boolean }> | undefined;
  const open = () =>
    (current ??= connect(options).then(
      (nc) => {
        let connected = true;
        void (async () => {
          for await (const status of nc.status()) {
            if (status.type === Events.Disconnect) connected = false;
            if (status.type === Events.Reconnect) connected = true;
          }
        })();
        void nc.closed().then(() => {
          current = undefined;
        });
        return { nc, connected: () => connected };
      },
      (error: unknown) => {
        current = undefined;
        throw new ForwardError(`cannot connect: ${String(error)}`, { cause: error });
      },
    ));
  return {
    async send({ id, body }, signal) {
      const { nc, connected } = await abortable(open(), signal, 'connecting');
      if (!connected()) throw new ForwardError('disconnected; the client is reconnecting');
      const h = headers();
      h.set('Content-Type', 'application/json');
      await nc
        .jetstream()
        .publish(subject, body, { msgID: id, headers: h, timeout: timeoutMs })
        .catch((error: unknown) => {
          const text = String(error);
          throw new ForwardError(
            /503|no responders/i.test(text)
              ? `no JetStream stream takes subject ${subject}`
              : `not stored: ${text}`,
            { cause: error },
          );
        });
    },
    async close() {
      const opened = await current?.catch(() => undefined);
      await opened?.nc.close();
    },
  };
}
