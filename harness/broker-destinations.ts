import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as amqpConnect } from 'amqplib';
import { connect as natsConnect, nanos, type NatsConnection } from 'nats';
import { Inbox, type Received } from './inbox';
import { freePort } from './private-redis';

/*
 * The brokers a service forwards to in the tests, the bench and the soak: a JetStream stream (on
 * the machine's NATS or a private nats-server) and a RabbitMQ queue, each read into an Inbox.
 */
export interface JetStream {
  /** FORWARD_URLS' entry for it. */
  readonly url: string;
  /** What an ordered consumer read from the stream (none with `consume: false`). */
  readonly inbox: Inbox;
  /** The messages the stream holds now. */
  stored(): Promise<number>;
  /** The Nats-Msg-Id of every message the stream holds, read one by one. */
  read(): Promise<string[]>;
  close(): Promise<void>;
}

/**
 * A stream of its own on a NATS server (the machine's on 4222 unless `server` names another)
 * and an ordered consumer reading it from the start: the inbox holds what the stream stored.
 */
export async function createJetStream(
  server = '127.0.0.1:4222',
  { consume = true } = {},
): Promise<JetStream> {
  const name = `AW_TEST_${randomUUID().replace(/-/g, '')}`;
  const subject = `aw-test.${name.toLowerCase()}`;
  const nc: NatsConnection = await natsConnect({ servers: server, maxReconnectAttempts: -1 });
  const jsm = await nc.jetstreamManager();
  await jsm.streams.add({ name, subjects: [subject], duplicate_window: nanos(120_000) });
  const inbox = new Inbox('the JetStream stream');
  const messages = consume ? await (await nc.jetstream().consumers.get(name)).consume() : undefined;
  if (messages !== undefined)
    void (async () => {
      for await (const message of messages) {
        inbox.push({
          id: message.headers?.get('Nats-Msg-Id') ?? '',
          traceparent: message.headers?.get('traceparent') ?? '',
          body: message.json<Received['body']>(),
        });
      }
    })();
  return {
    url: `nats://${server}/${subject}`,
    inbox,
    stored: async () => (await jsm.streams.info(name)).state.messages,
    async read() {
      const { first_seq: first, last_seq: last } = (await jsm.streams.info(name)).state;
      const ids: string[] = [];
      for (let seq = first; seq <= last && last > 0; seq += 1) {
        const message = await jsm.streams.getMessage(name, { seq });
        ids.push(message.header.get('Nats-Msg-Id'));
      }
      return ids;
    },
    async close() {
      await messages?.close();
      await jsm.streams.delete(name).catch(() => undefined);
      await nc.close();
    },
  };
}

export interface RabbitQueue {
  readonly url: string;
  /** What the consumer took from the queue (with `consume: false`, only once `read()` ran). */
  readonly inbox: Inbox;
  /** The messages in the queue now, not yet taken by a consumer. */
  queued(): Promise<number>;
  /** Takes every message in the queue now (starting the consumer), then every id taken. */
  read(): Promise<string[]>;
  close(): Promise<void>;
}

/**
 * An exchange and an exclusive queue bound to it on the machine's RabbitMQ (guest/guest), and a
 * consumer taking what arrives into the inbox; with `consume: false`, messages stay in the queue
 * until `read()`.
 */
export async function createRabbitQueue({ consume = true } = {}): Promise<RabbitQueue> {
  const exchange = `aw-test-${randomUUID()}`;
  const model = await amqpConnect('amqp://guest:guest@127.0.0.1:5672');
  const channel = await model.createChannel();
  await channel.assertExchange(exchange, 'direct', { durable: false, autoDelete: true });
  const { queue } = await channel.assertQueue('', { exclusive: true });
  await channel.bindQueue(queue, exchange, 'stored');
  const inbox = new Inbox('the RabbitMQ queue');
  const startConsuming = () =>
    channel.consume(
      queue,
      (message) => {
        if (message === null) return;
        const traceparent: unknown = message.properties.headers?.traceparent;
        inbox.push({
          id: String(message.properties.messageId),
          traceparent: String(traceparent),
          body: JSON.parse(message.content.toString()) as Received['body'],
        });
      },
      { noAck: true },
    );
  let consuming = consume ? startConsuming() : undefined;
  await consuming;
  const queued = async () => (await channel.checkQueue(queue)).messageCount;
  return {
    url: `amqp://guest:guest@127.0.0.1:5672/?exchange=${exchange}&routing_key=stored`,
    inbox,
    queued,
    async read() {
      const taken = inbox.messages.length + (await queued());
      consuming ??= startConsuming();
      await consuming;
      await inbox.atLeast(taken);
      return inbox.ids();
    },
    async close() {
      await model.close();
    },
  };
}

export interface PrivateNats {
  readonly server: string;
  stop(): Promise<void>;
  start(): Promise<void>;
}

/** A nats-server with JetStream of the test's own, on a free port: one a test may stop. */
export async function startPrivateNats(): Promise<PrivateNats> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'aw-nats-'));
  let child: ChildProcess | undefined;
  const start = async () => {
    const started = spawn(
      'nats-server',
      ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', dir],
      {
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    child = started;
    // It says so on standard error once it accepts connections (JetStream included).
    let said = '';
    await new Promise<void>((resolve, reject) => {
      started.stderr.on('data', (chunk: Buffer) => {
        said += chunk.toString();
        if (said.includes('Server is ready')) resolve();
      });
      started.once('exit', (code) => {
        reject(new Error(`nats-server exited (${code}): ${said}`));
      });
    });
  };
  await start();
  return {
    server: `127.0.0.1:${port}`,
    start,
    async stop() {
      const running = child;
      if (running === undefined || running.exitCode !== null) return;
      running.kill('SIGTERM');
      await once(running, 'exit');
    },
  };
}
