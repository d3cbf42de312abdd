import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { join } from 'node:path';
import { connect as amqpConnect } from 'amqplib';
import { connect as natsConnect } from 'nats';
import { sampleDelivery } from '../../src/webhooks/sample-delivery';
import { forwardSecret } from '../helpers/forward-destinations';
import { freePort } from '../helpers/private-redis';
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
  return {
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
}

it('the HTTP, NATS and RabbitMQ consumers, started first, each print the forwarded message', async () => {
  const run = randomUUID().replace(/-/g, '');
  const names = {
    STREAM: `AW_EXAMPLE_${run}`,
    SUBJECT: `aw-example.${run}`,
    DURABLE: 'indexer',
    EXCHANGE: `aw-example-${run}`,
    QUEUE: `aw-example-${run}`,
    ROUTING_KEY: 'stored',
  };
  const secret = forwardSecret();
  const port = await freePort();
  const consumers = [
    startConsumer('http-consumer.mjs', { FORWARD_SECRET: secret, CONSUMER_PORT: String(port) }),
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
      FORWARD_SECRET: secret,
    });
    const id = `example-${run}`;
    await pipeline.post(sampleDelivery('key.revoked', { id })).expect(202);
    const line = new RegExp(`^key\\.revoked:${id} key\\.revoked ${id} -$`, 'm');
    await Promise.all(consumers.map((consumer) => consumer.printed(line)));
    for (const consumer of consumers) expect(consumer.stdout().match(line)).toHaveLength(1);
  } finally {
    await pipeline?.close();
    for (const consumer of consumers) {
      if (consumer.child.exitCode !== null) continue;
      const exited = once(consumer.child, 'exit');
      consumer.child.kill('SIGTERM');
      await exited;
    }
    // The examples' stream, exchange and queue are durable: removed with the run's names.
    const nc = await natsConnect({ servers: NATS });
    await (await nc.jetstreamManager()).streams.delete(names.STREAM).catch(() => undefined);
    await nc.close();
    const amqp = await amqpConnect(AMQP);
    const channel = await amqp.createChannel();
    await channel.deleteQueue(names.QUEUE);
    await channel.deleteExchange(names.EXCHANGE);
    await amqp.close();
  }
}, 60_000);
