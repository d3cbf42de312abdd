import { subscribe } from 'node:diagnostics_channel';
import { createRequire } from 'node:module';
import { Socket } from 'node:net';
import {
  connect,
  ErrorCode,
  Events,
  headers,
  NatsError,
  type ConnectionOptions,
  type NatsConnection,
} from 'nats';
import { withDeadline } from '../../util/deadline.js';
import { ForwardError, PermanentForwardError, type Sender } from './sender.js';

/**
 * The sockets a connection's client dialled, so that the sender can close them itself: `nats`
 * 2.29.3 leaves the socket open when a connect times out (it only closes a transport that got
 * as far as the server's INFO), and an endpoint that accepts TCP and never answers kept one
 * socket per attempt, 6 attempts, 6 sockets, after `close()` too. Node announces every client
 * socket on the `net.client.socket` channel from inside `net.connect`, which the client's
 * transport calls synchronously from its `connect(server, options)`, for the first connect and
 * every reconnect alike; the options are the connection's, and carry its set under SOCKETS.
 * Not an AsyncLocalStorage: on Node 20 one in use tracks every promise of the process, which
 * costs every forwarded item CPU (docs/performance-history.md, "Figures behind the code"). The transport is the client's own class (no exports map keeps it private);
 * a test fails if a version of `nats` no longer dials from there (forward-sender-leaks).
 */
const SOCKETS = 'audioWebhooksSockets';
let dialling: Set<Socket> | undefined;
interface TransportClass {
  prototype: { connect: (this: unknown, server: unknown, options: object) => Promise<void> };
}
/** Marks the transport's `connect` as ours: a second copy of this module wraps it only once. */
const WRAPPED = Symbol.for('audio-webhooks.nats-dialling');

/**
 * Wraps the client's transport once, when the first NATS sender is made (a worker without a
 * NATS destination never touches the client's internals).
 */
function watchDials(): void {
  const { NodeTransport } = createRequire(__filename)('nats/lib/src/node_transport.js') as {
    NodeTransport: TransportClass;
  };
  const proto = NodeTransport.prototype as TransportClass['prototype'] & { [WRAPPED]?: true };
  if (proto[WRAPPED] === true) return;
  const connectTransport = proto.connect;
  proto.connect = function (server, options) {
    const sockets: unknown = (options as Record<string, unknown>)[SOCKETS];
    dialling = sockets instanceof Set ? (sockets as Set<Socket>) : undefined;
    try {
      return connectTransport.call(this, server, options);
    } finally {
      dialling = undefined;
    }
  };
  proto[WRAPPED] = true;
}
subscribe('net.client.socket', (message) => {
  const sockets = dialling;
  const { socket } = message as { socket?: unknown };
  if (sockets === undefined || !(socket instanceof Socket)) return;
  // The client holds one socket at a time and dials again only once it gave up the last one
  // (closed on a disconnect, or left open after a dial that timed out).
  for (const previous of sockets) if (previous !== socket) previous.destroy();
  sockets.clear();
  sockets.add(socket);
});

/** The code of the client's own refusal of a message over the server's `max_payload`. */
const MAX_PAYLOAD_EXCEEDED: string = ErrorCode.MaxPayloadExceeded;

/** Destroys the connection's sockets and waits until their descriptors are closed. */
async function release(sockets: Set<Socket>): Promise<void> {
  const open = [...sockets].filter((socket) => !socket.closed);
  sockets.clear();
  await Promise.all(
    open.map(
      (socket) =>
        // Not events.once: an 'error' on the way would reject it before the descriptor closed.
        new Promise<void>((resolve) => {
          socket.once('close', () => {
            resolve();
          });
          socket.destroy();
        }),
    ),
  );
}

interface Live {
  readonly nc: NatsConnection;
  readonly sockets: Set<Socket>;
  readonly connected: () => boolean;
}

/**
 * Publishes each message to JetStream (the official `nats` client) with `Nats-Msg-Id` set to
 * its id, so a stream's duplicate window drops a repeat, and resolves on the stream's PubAck:
 * stored, not just sent. One connection per destination, opened on the first message and reused;
 * while it is disconnected a send fails at once instead of waiting in the client's buffer (a
 * forward slot held for a down server would delay other destinations). The stream itself is the
 * team's: a subject no stream takes is an error.
 */
export function createNatsSender(url: URL, subject: string, timeoutMs: number): Sender {
  watchDials();
  const options: ConnectionOptions = {
    servers: `${url.hostname}:${url.port || '4222'}`,
    name: 'audio-webhooks',
    timeout: timeoutMs,
    reconnect: true,
    // Ten tries a second apart ride out a server restart; past them the client closes, its
    // sockets are released, and the next message connects afresh, so a server gone for good
    // holds nothing between attempts.
    maxReconnectAttempts: 10,
    reconnectTimeWait: 1000,
    // The client would build an Error per publish to keep its call site; ours says what failed.
    noAsyncTraces: true,
    ...(url.password !== ''
      ? { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) }
      : url.username !== ''
        ? { token: decodeURIComponent(url.username) }
        : {}),
  };
  let closed = false;
  let current: Promise<Live> | undefined;

  const open = (): Promise<Live> => {
    if (closed) return Promise.reject(new ForwardError('the sender is closed'));
    if (current !== undefined) return current;
    const sockets = new Set<Socket>();
    const opening: Promise<Live> = connect({
      ...options,
      [SOCKETS]: sockets,
    } as ConnectionOptions).then(
      (nc) => {
        let connected = true;
        void (async () => {
          for await (const status of nc.status()) {
            if (status.type === Events.Disconnect) connected = false;
            if (status.type === Events.Reconnect) connected = true;
          }
        })();
        void nc.closed().then(async () => {
          if (current === opening) current = undefined;
          await release(sockets);
        });
        return { nc, sockets, connected: () => connected };
      },
      async (error: unknown) => {
        if (current === opening) current = undefined;
        await release(sockets);
        throw new ForwardError(`cannot connect: ${String(error)}`, { cause: error });
      },
    );
    current = opening;
    return opening;
  };

  return {
    async send({ id, body, traceparent }, signal) {
      const { nc, connected } = await withDeadline(open(), signal, 'connecting');
      if (!connected()) throw new ForwardError('disconnected; the client is reconnecting');
      const h = headers();
      h.set('Content-Type', 'application/json');
      h.set('traceparent', traceparent);
      const stored = nc
        .jetstream()
        .publish(subject, body, { msgID: id, headers: h, timeout: timeoutMs })
        .catch((error: unknown) => {
          const text = String(error);
          // The client refuses before sending what the server's INFO says it would refuse
          // ("Maximum Payload Violation", which also ends the connection): no retry can pass.
          if (
            (error instanceof NatsError && error.code === MAX_PAYLOAD_EXCEEDED) ||
            /maximum payload/i.test(text)
          ) {
            const limit = nc.info?.max_payload;
            throw new PermanentForwardError(
              `a message of ${Buffer.byteLength(body)} bytes is over the server's max_payload` +
                (limit === undefined ? '' : ` of ${limit} bytes`),
              { cause: error },
            );
          }
          throw new ForwardError(
            /503|no responders/i.test(text)
              ? `no JetStream stream takes subject ${subject}`
              : `not stored: ${text}`,
            { cause: error },
          );
        });
      // The send's own deadline too (a delivery job waits a second at the most, not timeoutMs).
      await withDeadline(stored, signal, 'waiting for the PubAck');
    },
    async close() {
      closed = true;
      const live = await current?.catch(() => undefined);
      if (live === undefined) return;
      await live.nc.close();
      await release(live.sockets);
    },
  };
}
