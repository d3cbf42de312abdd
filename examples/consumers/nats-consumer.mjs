// A consumer of the receiver's NATS JetStream forwards (docs/forwarding.md, "Consumers"). Start it
// first: it creates the stream that takes the subject (the service never creates one, and a
// publish no stream takes is refused and retried), then a durable consumer that reads it, and
// prints the FORWARD_URLS entry to start the service with.
//
//   node examples/consumers/nats-consumer.mjs
//
// NATS_URL (127.0.0.1:4222), STREAM, SUBJECT and DURABLE name what it uses. Their defaults end in
// a tag made for this run (AUDIO_EXAMPLE_<tag>, audio-example.<tag>, indexer-<tag>): two runs on
// one server, yours and a colleague's, never share a stream. On Ctrl-C or SIGTERM it deletes what
// it created; a stream or consumer that was there before it started is left as it was. Killed
// unannounced (kill -9), it leaves its stream (`nats stream rm <name>`); its consumer goes by
// itself an hour after its last reader. Each message's trace is continued (tracing.mjs): its
// trace id is printed, and with OTEL_EXPORTER_OTLP_ENDPOINT set its span exported.
import { randomBytes } from 'node:crypto';
import process from 'node:process';
import { connect, nanos } from 'nats';
import { startTracing } from './tracing.mjs';

const tag = randomBytes(4).toString('hex');
const servers = process.env.NATS_URL ?? '127.0.0.1:4222';
const stream = process.env.STREAM ?? `AUDIO_EXAMPLE_${tag}`;
const subject = process.env.SUBJECT ?? `audio-example.${tag}`;
const durable = process.env.DURABLE ?? `indexer-${tag}`;

const tracing = await startTracing('nats-consumer');
const nc = await connect({ servers });
const jsm = await nc.jetstreamManager();
const found = (lookup) =>
  lookup.then(
    () => true,
    () => false,
  );
const createdStream = !(await found(jsm.streams.info(stream)));
if (createdStream) {
  // The stream drops a message whose Nats-Msg-Id it stored within the window: a forward sent
  // again (a retry, a replay) within the hour is stored once.
  await jsm.streams.add({ name: stream, subjects: [subject], duplicate_window: nanos(3_600_000) });
}
const createdConsumer = !(await found(jsm.consumers.info(stream, durable)));
if (createdConsumer) {
  await jsm.consumers.add(stream, {
    durable_name: durable,
    ack_policy: 'explicit',
    inactive_threshold: nanos(3_600_000),
  });
}
const messages = await (await nc.jetstream().consumers.get(stream, durable)).consume();
// Credentials in NATS_URL stay out of what is printed.
const server = servers
  .split(',')[0]
  .replace(/^nats:\/\//, '')
  .replace(/^[^@]*@/, '');
process.stdout.write(
  `nats-consumer: reading stream ${stream} (subject ${subject}) as ${durable}; start the service with FORWARD_URLS=nats://${server}/${subject}\n`,
);
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    void messages.close();
  });
}
for await (const m of messages) {
  const message = m.json();
  await tracing.consume(
    'consume audio-webhooks forward',
    m.headers?.get('traceparent'),
    async (traceId) => {
      // A message is delivered again when its ack is lost: dedupe on the id in your database.
      process.stdout.write(
        `${m.headers?.get('Nats-Msg-Id')} ${message.type} ${message.id} ${message.stored?.name ?? '-'} ${traceId}\n`,
      );
      m.ack();
    },
  );
}
// Stopped: what this run created goes (a stream takes its consumers with it).
if (createdStream) await jsm.streams.delete(stream);
else if (createdConsumer) await jsm.consumers.delete(stream, durable);
await nc.close();
await tracing.shutdown();
