// A consumer of the receiver's NATS JetStream forwards (docs/forwarding.md, "Consumers"). Start it
// first: it creates the stream that takes the subject (the service never creates one, and a
// publish no stream takes is refused and retried), then a durable consumer that reads it. Then
// start the service with FORWARD_URLS=nats://127.0.0.1:4222/audio.stored.
//
//   node examples/consumers/nats-consumer.mjs
//
// NATS_URL (127.0.0.1:4222), STREAM (AUDIO), SUBJECT (audio.stored) and DURABLE (indexer) name
// what it uses.
import process from 'node:process';
import { connect, nanos } from 'nats';

const servers = process.env.NATS_URL ?? '127.0.0.1:4222';
const stream = process.env.STREAM ?? 'AUDIO';
const subject = process.env.SUBJECT ?? 'audio.stored';
const durable = process.env.DURABLE ?? 'indexer';

const nc = await connect({ servers });
const jsm = await nc.jetstreamManager();
const exists = await jsm.streams.info(stream).then(
  () => true,
  () => false,
);
if (!exists) {
  // The stream drops a message whose Nats-Msg-Id it stored within the window: a forward sent
  // again (a retry, a replay) within the hour is stored once.
  await jsm.streams.add({ name: stream, subjects: [subject], duplicate_window: nanos(3_600_000) });
}
await jsm.consumers.add(stream, { durable_name: durable, ack_policy: 'explicit' });
const messages = await (await nc.jetstream().consumers.get(stream, durable)).consume();
process.stdout.write(
  `nats-consumer: reading stream ${stream} (subject ${subject}) as ${durable}\n`,
);
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    void messages.close();
  });
}
for await (const m of messages) {
  const message = m.json();
  // A message is delivered again when its ack is lost: dedupe on the id in your database.
  process.stdout.write(
    `${m.headers?.get('Nats-Msg-Id')} ${message.type} ${message.id} ${message.stored?.name ?? '-'}\n`,
  );
  m.ack();
}
await nc.close();
