import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { connect as amqpConnect } from 'amqplib';
import { connect as natsConnect } from 'nats';
import { createAmqpSender } from '../../src/forwarding/senders/amqp-sender';
import { createNatsSender } from '../../src/forwarding/senders/nats-sender';
import {
  ForwardError,
  PermanentForwardError,
  type Sender,
} from '../../src/forwarding/senders/sender';
import { eventually } from '../../src/util/eventually';
import { createJetStream, startPrivateNats } from '../../harness/broker-destinations';
import { afterTest } from '../helpers/after-test';

const RABBIT_PORT = 5672;
const NATS_PORT = 4222;
// The machine's RabbitMQ runs with the default max_message_size (`rabbitmqctl environment`:
// {max_message_size,134217728}), 128 MiB.
const RABBIT_MAX_MESSAGE = 128 * 1024 * 1024;

/**
 * This process's open TCP sockets whose peer listens on `port`. /proc/self/net/tcp lists every
 * socket of the network namespace (the brokers' own, other processes'), so only the rows whose
 * inode is one of this process's file descriptors count; TIME_WAIT rows have no inode.
 */
function socketsTo(port: number): number {
  const inodes = new Set<string>();
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const inode = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/self/fd/${fd}`))?.[1];
      if (inode !== undefined) inodes.add(inode);
    } catch {
      // The descriptor readdir itself held is gone by the time it is read.
    }
  }
  const peer = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  let count = 0;
  for (const table of ['/proc/self/net/tcp', '/proc/self/net/tcp6']) {
    for (const row of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const fields = row.trim().split(/\s+/);
      const remote = fields[2];
      const inode = fields[9];
      if (remote?.endsWith(peer) === true && inode !== undefined && inodes.has(inode)) count += 1;
    }
  }
  return count;
}

/** Waits (up to 5 s) until this process holds `count` sockets to `port`: a peer's FIN is not ours to await. */
async function settlesAt(port: number, count: number): Promise<number> {
  return eventually(() => Promise.resolve(socketsTo(port) === count ? count : undefined), {
    timeoutMs: 5_000,
    everyMs: 20,
  }).catch(() => socketsTo(port));
}

function closing(sender: Sender): Sender {
  afterTest(() => sender.close());
  return sender;
}

/** A TCP server on 127.0.0.1 (`port`, else a free one) that accepts every connection and never says a word. */
async function silentServer(port = 0): Promise<{ port: number; server: Server }> {
  const accepted = new Set<Socket>();
  const server = createServer((socket) => {
    accepted.add(socket);
    socket.on('close', () => accepted.delete(socket));
  });
  server.listen(port, '127.0.0.1');
  await once(server, 'listening');
  afterTest(async () => {
    for (const socket of accepted) socket.destroy();
    server.close();
    await once(server, 'close');
  });
  return { port: (server.address() as AddressInfo).port, server };
}

/** The error `work` rejects with (the test fails if it resolves). */
async function rejection(work: Promise<unknown>): Promise<Error> {
  try {
    await work;
  } catch (error: unknown) {
    if (error instanceof Error) return error;
    throw new Error(`rejected with a non-Error: ${String(error)}`, { cause: error });
  }
  throw new Error('resolved; a rejection was expected');
}

const message = (body = '{"type":"test"}') => ({
  id: `test:${randomUUID()}`,
  body,
  traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
});

describe('RabbitMQ sender', () => {
  it('an exchange that does not exist: 10 failed sends hold one connection, retried (not permanent), and close() leaves none', async () => {
    expect(socketsTo(RABBIT_PORT)).toBe(0);
    const exchange = `aw-missing-${randomUUID()}`;
    const sender = closing(
      createAmqpSender(
        new URL(`amqp://guest:guest@127.0.0.1:${RABBIT_PORT}/`),
        exchange,
        'stored',
        5_000,
      ),
    );
    const errors: Error[] = [];
    for (let i = 0; i < 10; i += 1)
      errors.push(await rejection(sender.send(message(), AbortSignal.timeout(10_000))));
    const afterSends = socketsTo(RABBIT_PORT);
    await sender.close();
    const afterClose = await settlesAt(RABBIT_PORT, 0);
    // One connection per destination, a new channel after each one the broker closed.
    expect({ afterSends, afterClose }).toEqual({ afterSends: 1, afterClose: 0 });
    for (const error of errors) {
      expect(error).toBeInstanceOf(ForwardError);
      expect(error).not.toBeInstanceOf(PermanentForwardError);
      expect(error.message).toContain(exchange);
    }
  });

  it('a message over the broker max_message_size (128 MiB): PermanentForwardError naming both sizes, and the same connection takes the next message', async () => {
    // An exchange with a queue bound, on a connection of the test's own (one socket to 5672).
    const model = await amqpConnect(`amqp://guest:guest@127.0.0.1:${RABBIT_PORT}`);
    afterTest(() => model.close());
    const channel = await model.createChannel();
    const exchange = `aw-test-${randomUUID()}`;
    await channel.assertExchange(exchange, 'direct', { durable: false, autoDelete: true });
    const { queue } = await channel.assertQueue('', { exclusive: true });
    await channel.bindQueue(queue, exchange, 'stored');
    const own = socketsTo(RABBIT_PORT);

    const sender = closing(
      createAmqpSender(
        new URL(`amqp://guest:guest@127.0.0.1:${RABBIT_PORT}/`),
        exchange,
        'stored',
        20_000,
      ),
    );
    const bytes = RABBIT_MAX_MESSAGE + 1;
    // A small message published right after the big one, on the same channel, is dropped when
    // the broker closes it: that one may pass next time, so it is not refused for good.
    const [big, small] = await Promise.allSettled([
      sender.send(message('x'.repeat(bytes)), AbortSignal.timeout(20_000)),
      sender.send(message(), AbortSignal.timeout(20_000)),
    ]);
    expect(small.status === 'fulfilled' || !(small.reason instanceof PermanentForwardError)).toBe(
      true,
    );
    expect(big.status).toBe('rejected');
    const error: unknown = big.status === 'rejected' ? big.reason : undefined;
    if (!(error instanceof Error)) throw new Error('the big message was not refused with an Error');
    expect(error).toBeInstanceOf(PermanentForwardError);
    expect(error.message).toContain(String(bytes));
    expect(error.message).toContain(String(RABBIT_MAX_MESSAGE));

    await sender.send(message(), AbortSignal.timeout(5_000));
    expect(await channel.get(queue, { noAck: true })).not.toBe(false);
    expect(socketsTo(RABBIT_PORT)).toBe(own + 1);
    await sender.close();
    expect(await settlesAt(RABBIT_PORT, own)).toBe(own);
  });
});

describe('NATS sender', () => {
  it('an endpoint that accepts and never answers: 6 timed-out connects leave no socket, before or after close()', async () => {
    const { port } = await silentServer();
    const sender = closing(
      createNatsSender(new URL(`nats://127.0.0.1:${port}/aw-test.silent`), 'aw-test.silent', 200),
    );
    const errors: Error[] = [];
    const afterEachSend: number[] = [];
    for (let i = 0; i < 6; i += 1) {
      errors.push(await rejection(sender.send(message(), AbortSignal.timeout(10_000))));
      afterEachSend.push(socketsTo(port));
    }
    await sender.close();
    const afterClose = socketsTo(port);
    expect({ afterEachSend, afterClose }).toEqual({
      afterEachSend: [0, 0, 0, 0, 0, 0],
      afterClose: 0,
    });
    for (const error of errors) {
      expect(error).toBeInstanceOf(ForwardError);
      expect(error).not.toBeInstanceOf(PermanentForwardError);
      expect(error.message).toMatch(/timeout/i);
    }
  });

  it('a message over the server max_payload: PermanentForwardError at once, naming the size and the limit; the connection then stores the next message', async () => {
    const stream = await createJetStream(`127.0.0.1:${NATS_PORT}`, { consume: false });
    afterTest(() => stream.close());
    // The server's limit as it announces it to every client (1 MiB unless configured).
    const probe = await natsConnect({ servers: `127.0.0.1:${NATS_PORT}` });
    const limit = probe.info?.max_payload ?? 0;
    await probe.close();
    expect(limit).toBeGreaterThan(0);
    const own = socketsTo(NATS_PORT);

    const subject = new URL(stream.url).pathname.slice(1);
    const sender = closing(createNatsSender(new URL(stream.url), subject, 5_000));
    const bytes = limit + 1;
    // Refused by the sender itself: a send that waited for its timeout would end in an abort.
    const error = await rejection(
      sender.send(message('x'.repeat(bytes)), AbortSignal.timeout(60_000)),
    );
    expect(error).toBeInstanceOf(PermanentForwardError);
    expect(error.message).toMatch(/max_payload/i);
    expect(error.message).toContain(String(bytes));
    expect(error.message).toContain(String(limit));

    for (let i = 0; i < 3; i += 1) await sender.send(message(), AbortSignal.timeout(5_000));
    expect(await stream.stored()).toBe(3);
    expect(socketsTo(NATS_PORT)).toBe(own + 1);
    await sender.close();
    expect(socketsTo(NATS_PORT)).toBe(own);
  });

  it('a server gone silent after a restart: each timed-out reconnect lets go of its socket, and close() leaves none', async () => {
    const nats = await startPrivateNats();
    afterTest(() => nats.stop());
    const port = Number(nats.server.split(':')[1]);
    const sender = closing(
      createNatsSender(new URL(`nats://${nats.server}/aw-test.none`), 'aw-test.none', 200),
    );
    // Connects; no stream takes the subject, which is all this needs. On a loaded machine the
    // first connect may outlast the sender's 200 ms and be let go: sent again until one holds.
    await eventually(async () => {
      await rejection(sender.send(message(), AbortSignal.timeout(5_000)));
      return socketsTo(port) === 1 ? true : undefined;
    });

    await nats.stop();
    const { server } = await silentServer(port);
    let dials = 0;
    await new Promise<void>((resolve, reject) => {
      const deadline = setTimeout(() => {
        reject(new Error(`${dials} reconnects in 10 s`));
      }, 10_000);
      server.on('connection', () => {
        dials += 1;
        if (dials < 4) return;
        clearTimeout(deadline);
        resolve();
      });
    });
    // The fourth dial's socket, the three before it closed.
    expect(await settlesAt(port, 1)).toBe(1);
    await sender.close();
    expect(socketsTo(port)).toBe(0);
  });
});
