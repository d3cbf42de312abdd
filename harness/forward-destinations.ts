import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as amqpConnect } from 'amqplib';
import { connect as natsConnect, nanos, type NatsConnection } from 'nats';
import { Webhook } from 'standardwebhooks';
import { freePort } from './private-redis';

/** What a destination received: the message id, its headers' view, and the parsed body. */
export interface Received {
  readonly id: string;
  readonly body: {
    type: string;
    id: string;
    timestamp: string;
    data: Record<string, unknown>;
    stored?: { name: string; bytes: number; sha256: string; content_type: string };
  };
}

/** How long `Inbox.atLeast` waits by default: below Jest's 30 s, so its own message is seen. */
const ARRIVAL_MS = 25_000;

/** Messages arriving, with a wait for the n-th: each destination's consumer feeds one. */
export class Inbox {
  readonly messages: Received[] = [];
  private readonly waiters: { count: number; resolve: () => void }[] = [];

  /** `name`: the destination, for a wait that fails. */
  constructor(private readonly name: string) {}

  push(message: Received): void {
    this.messages.push(message);
    for (const waiter of this.waiters.filter((w) => this.messages.length >= w.count)) {
      this.waiters.splice(this.waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  }

  /**
   * Resolves once `count` messages arrived (repeats included); fails after `timeoutMs`, naming
   * the destination, how many it waited for and which ones it has, rather than leaving Jest to
   * say "Exceeded timeout".
   */
  atLeast(count: number, timeoutMs = ARRIVAL_MS): Promise<void> {
    if (this.messages.length >= count) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const waiter = {
        count,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        const got = this.ids();
        reject(
          new Error(
            `${this.name}: waited ${timeoutMs} ms for ${count} messages, ${got.length} arrived` +
              (got.length > 0 ? ` (the last: ${got.slice(-5).join(', ')})` : ''),
          ),
        );
      }, timeoutMs);
      // A deadline keeps nothing alive: a waiter that lost a race would otherwise hold the
      // Jest worker open until it fires.
      timer.unref();
      this.waiters.push(waiter);
    });
  }

  ids(): string[] {
    return this.messages.map((m) => m.id);
  }
}

/** A `whsec_` secret as FORWARD_SECRET takes it. */
export function forwardSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

export interface HttpEndpoint {
  readonly url: string;
  readonly inbox: Inbox;
  /** Requests whose signature did not verify (never expected). */
  readonly rejected: string[];
  /** While set, every request is answered 503 (and not put in the inbox). */
  failing: boolean;
  /** The next this many requests are answered 503. */
  failNext: number;
  /** Every request seen, answered or refused. */
  requests: number;
  /** When each request arrived (Date.now()), answered or refused. */
  readonly arrivals: number[];
  /** When set, answers a request its way instead (not put in the inbox): a 429, a 503. */
  refuse: (() => { status: number; headers?: Record<string, string> } | undefined) | undefined;
  close(): Promise<void>;
}

/** A consumer's HTTP endpoint that verifies each forward with the `standardwebhooks` library. */
export async function startHttpEndpoint(secret: string): Promise<HttpEndpoint> {
  const verifier = new Webhook(secret);
  const inbox = new Inbox('the HTTP endpoint');
  const endpoint: HttpEndpoint = {
    url: '',
    inbox,
    rejected: [],
    failing: false,
    failNext: 0,
    requests: 0,
    arrivals: [],
    refuse: undefined,
    close: () => Promise.resolve(),
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      endpoint.requests += 1;
      endpoint.arrivals.push(Date.now());
      const refusal = endpoint.refuse?.();
      if (refusal !== undefined) {
        res.writeHead(refusal.status, refusal.headers).end();
        return;
      }
      const failedNow = endpoint.failNext > 0;
      if (failedNow) endpoint.failNext -= 1;
      if (endpoint.failing || failedNow) {
        res.writeHead(503).end();
        return;
      }
      const body = Buffer.concat(chunks).toString();
      try {
        verifier.verify(body, req.headers as Record<string, string>);
      } catch (error: unknown) {
        endpoint.rejected.push(String(error));
        res.writeHead(400).end();
        return;
      }
      inbox.push({
        id: String(req.headers['webhook-id']),
        body: JSON.parse(body) as Received['body'],
      });
      res.writeHead(204).end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return Object.assign(endpoint, {
    url: `http://127.0.0.1:${port}/hooks/audio`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
        server.closeAllConnections();
      }),
  });
}

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
        inbox.push({
          id: String(message.properties.messageId),
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

export interface ThreeDestinations {
  readonly endpoint: HttpEndpoint;
  readonly stream: JetStream;
  readonly rabbit: RabbitQueue;
  /** FORWARD_URLS and FORWARD_SECRET for a service forwarding to all three. */
  readonly env: { readonly FORWARD_URLS: string; readonly FORWARD_SECRET: string };
  close(): Promise<void>;
}

/**
 * One destination of each kind, with a secret of their own: an HTTP endpoint, a stream on
 * `natsServer` (the machine's NATS unless a private one is named) and a RabbitMQ queue.
 */
export async function startThreeDestinations(
  natsServer?: string,
  streamOptions?: { consume?: boolean },
  queueOptions?: { consume?: boolean },
): Promise<ThreeDestinations> {
  const secret = forwardSecret();
  const [endpoint, stream, rabbit] = await Promise.all([
    startHttpEndpoint(secret),
    createJetStream(natsServer, streamOptions),
    createRabbitQueue(queueOptions),
  ]);
  return {
    endpoint,
    stream,
    rabbit,
    env: { FORWARD_URLS: [endpoint.url, stream.url, rabbit.url].join(','), FORWARD_SECRET: secret },
    async close() {
      await Promise.all([endpoint.close(), stream.close(), rabbit.close()]);
    },
  };
}
