import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { join } from 'node:path';
import { connect as amqpConnect, type Channel } from 'amqplib';
import { connect as natsConnect } from 'nats';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';
import { forwardKeyPair } from '../../harness/forward-destinations';
import { freePort } from '../../harness/private-redis';
import { startTestPipeline } from '../helpers/test-pipeline';

// docs/forwarding.md's consumers, run as a reader runs them (`node examples/consumers/…`), each
// started first, against the machine's NATS (JetStream) and RabbitMQ and a forwarding pipeline.
const EXAMPLES = join(__dirname, '..', '..', 'examples', 'consumers');
const NATS = '127.0.0.1:4222';
const AMQP = 'amqp://guest:guest@127.0.0.1:5672';

interface Consumer {
  readonly child: ChildProcess;
  /** Resolves once standard output holds a line matching `pattern`. */
  printed(pattern: RegExp): Promise<void>;
  stdout(): string;
}

/** Every consumer a test started: stopped after it, also when it failed or timed out. */
const running: Consumer[] = [];
afterEach(async () => {
  await stop(running.splice(0));
});

function startConsumer(file: string, env: Record<string, string>): Consumer {
  const child = spawn(process.execPath, [join(EXAMPLES, file)], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  const waiters: { pattern: RegExp; resolve: () => void }[] = [];
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    for (const waiter of waiters.filter((w) => w.pattern.test(stdout))) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = once(child, 'exit');
  const consumer: Consumer = {
    child,
    stdout: () => stdout,
    printed(pattern) {
      if (pattern.test(stdout)) return Promise.resolve();
      return Promise.race([
        new Promise<void>((resolve) => waiters.push({ pattern, resolve })),
        exited.then(([code]) => {
          throw new Error(`${file} exited (${String(code)}) before ${String(pattern)}: ${stderr}`);
        }),
      ]);
    },
  };
  running.push(consumer);
  return consumer;
}

/** SIGTERM to each consumer still running, then waits for it to exit. */
async function stop(consumers: readonly Consumer[]): Promise<void> {
  for (const consumer of consumers) {
    if (consumer.child.exitCode !== null || consumer.child.signalCode !== null) continue;
    const exited = once(consumer.child, 'exit');
    consumer.child.kill('SIGTERM');
    await exited;
  }
}

/** What the NATS and RabbitMQ examples of one run name. */
interface BrokerNames {
  readonly STREAM: string;
  readonly DURABLE: string;
  readonly EXCHANGE: string;
  readonly QUEUE: string;
}

/**
 * Which of these the brokers hold: the JetStream stream and its consumer, the RabbitMQ queue and
 * exchange (each looked for on a channel of its own, which the broker closes when it lacks it).
 */
async function leftOnBrokers(names: readonly BrokerNames[]): Promise<string[]> {
  const left: string[] = [];
  const nc = await natsConnect({ servers: NATS });
  try {
    const jsm = await nc.jetstreamManager();
    const streams: string[] = [];
    for await (const name of jsm.streams.names()) streams.push(name);
    for (const { STREAM, DURABLE } of names) {
      if (!streams.includes(STREAM)) continue;
      left.push(`stream ${STREAM}`);
      for await (const consumer of jsm.consumers.list(STREAM))
        if (consumer.name === DURABLE) left.push(`consumer ${DURABLE}`);
    }
  } finally {
    await nc.close();
  }
  const amqp = await amqpConnect(AMQP);
  try {
    const has = async (check: (channel: Channel) => Promise<unknown>) => {
      const channel = await amqp.createChannel();
      channel.on('error', () => undefined);
      return check(channel).then(
        async () => {
          await channel.close();
          return true;
        },
        () => false,
      );
    };
    for (const { QUEUE, EXCHANGE } of names) {
      if (await has((channel) => channel.checkQueue(QUEUE))) left.push(`queue ${QUEUE}`);
      if (await has((channel) => channel.checkExchange(EXCHANGE)))
        left.push(`exchange ${EXCHANGE}`);
    }
  } finally {
    await amqp.close();
  }
  return left;
}

/** Removes whatever of these a failed run left, so that a failure does not litter the brokers. */
async function removeFromBrokers(names: readonly BrokerNames[]): Promise<void> {
  const nc = await natsConnect({ servers: NATS });
  const jsm = await nc.jetstreamManager();
  for (const { STREAM } of names) await jsm.streams.delete(STREAM).catch(() => undefined);
  await nc.close();
  const amqp = await amqpConnect(AMQP);
  const channel = await amqp.createChannel();
  for (const { QUEUE, EXCHANGE } of names) {
    await channel.deleteQueue(QUEUE);
    await channel.deleteExchange(EXCHANGE);
  }
  await amqp.close();
}

it('the HTTP (holding only the public key), NATS and RabbitMQ consumers, started first, each print the forwarded message with its one trace id, and leave nothing on the brokers once stopped', async () => {
  const run = randomUUID().replace(/-/g, '');
  const names = {
    STREAM: `AW_EXAMPLE_${run}`,
    SUBJECT: `aw-example.${run}`,
    DURABLE: 'indexer',
    EXCHANGE: `aw-example-${run}`,
    QUEUE: `aw-example-${run}`,
    ROUTING_KEY: 'stored',
  };
  const { signingKey, publicKey } = forwardKeyPair();
  const port = await freePort();
  const consumers = [
    startConsumer('http-consumer.mjs', {
      FORWARD_PUBLIC_KEY: publicKey,
      CONSUMER_PORT: String(port),
    }),
    startConsumer('nats-consumer.mjs', { NATS_URL: NATS, ...names }),
    startConsumer('amqp-consumer.mjs', { AMQP_URL: AMQP, ...names }),
  ];
  let pipeline: Awaited<ReturnType<typeof startTestPipeline>> | undefined;
  try {
    // Started first: the stream, the exchange and the bound queue exist before any forward.
    await Promise.all(consumers.map((consumer) => consumer.printed(/^[a-z-]+: \S.*\n/)));
    pipeline = await startTestPipeline({}, undefined, {
      FORWARD_URLS: [
        `http://127.0.0.1:${port}/audio`,
        `nats://${NATS}/${names.SUBJECT}`,
        `${AMQP}/?exchange=${names.EXCHANGE}&routing_key=${names.ROUTING_KEY}`,
      ].join(','),
      FORWARD_SIGNING_KEY: signingKey,
    });
    const id = `example-${run}`;
    const trace = randomBytes(16).toString('hex');
    await pipeline
      .post(sampleDelivery('key.revoked', { id }))
      .set('traceparent', `00-${trace}-${randomBytes(8).toString('hex')}-01`)
      .expect(202);
    // The trace id last: the one the delivery came with, in each consumer.
    const line = new RegExp(`^key\\.revoked:${id} key\\.revoked ${id} - ${trace}$`, 'm');
    await Promise.all(consumers.map((consumer) => consumer.printed(line)));
    for (const consumer of consumers) expect(consumer.stdout().match(line)).toHaveLength(1);
    await pipeline.close();
    pipeline = undefined;
    await stop(consumers);
    expect(await leftOnBrokers([names])).toEqual([]);
  } finally {
    await pipeline?.close();
    await stop(consumers);
    await removeFromBrokers([names]);
  }
}, 60_000);

it('with no names given, two runs of each broker consumer on one broker name their own, print the FORWARD_URLS entry that reaches them, and leave nothing once stopped', async () => {
  const consumers = [
    startConsumer('nats-consumer.mjs', { NATS_URL: NATS }),
    startConsumer('nats-consumer.mjs', { NATS_URL: NATS }),
    startConsumer('amqp-consumer.mjs', { AMQP_URL: AMQP }),
    startConsumer('amqp-consumer.mjs', { AMQP_URL: AMQP }),
  ];
  const names: BrokerNames[] = [];
  let pipeline: Awaited<ReturnType<typeof startTestPipeline>> | undefined;
  try {
    const starts = await Promise.all(
      consumers.map(async (consumer) => {
        await consumer.printed(/FORWARD_URLS=.*\n/);
        return consumer.stdout().split('\n')[0] ?? '';
      }),
    );
    const [nats1 = '', nats2 = '', amqp1 = '', amqp2 = ''] = starts;
    for (const [nats, amqp] of [
      [nats1, amqp1],
      [nats2, amqp2],
    ] as const) {
      names.push({
        STREAM: /reading stream (\S+)/.exec(nats)?.[1] ?? '',
        DURABLE: / as (\S+);/.exec(nats)?.[1] ?? '',
        QUEUE: /reading queue (\S+)/.exec(amqp)?.[1] ?? '',
        EXCHANGE: /\(exchange (\S+),/.exec(amqp)?.[1] ?? '',
      });
    }
    // Each run names its own: nothing shared between the two.
    const all = names.flatMap(({ STREAM, DURABLE, EXCHANGE, QUEUE }) => [
      STREAM,
      DURABLE,
      EXCHANGE,
      QUEUE,
    ]);
    expect(all.every((name) => name !== '')).toBe(true);
    expect(new Set(all).size).toBe(all.length);
    expect(starts.join('\n')).not.toContain('guest:guest');
    // The entries as printed (the AMQP one with the URL put in): each consumer gets the message.
    const entries = starts.map((start) =>
      (/FORWARD_URLS='?([^'\s]+)'?$/.exec(start)?.[1] ?? '').replace('<AMQP_URL>', AMQP),
    );
    pipeline = await startTestPipeline({}, undefined, { FORWARD_URLS: entries.join(',') });
    const id = `example-${randomUUID()}`;
    await pipeline.post(sampleDelivery('key.revoked', { id })).expect(202);
    const line = new RegExp(`^key\\.revoked:${id} key\\.revoked ${id} - [0-9a-f]{32}$`, 'm');
    await Promise.all(consumers.map((consumer) => consumer.printed(line)));
    await pipeline.close();
    pipeline = undefined;
    await stop(consumers);
    expect(await leftOnBrokers(names)).toEqual([]);
  } finally {
    await pipeline?.close();
    await stop(consumers);
    await removeFromBrokers(names);
  }
}, 60_000);
