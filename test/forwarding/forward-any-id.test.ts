import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { startThreeDestinations, type ThreeDestinations } from '../../harness/forward-destinations';
import { startTestPipeline, type TestPipeline } from '../helpers/test-pipeline';
import { deleteKeys } from '../helpers/test-receiver';

/**
 * Accepting is a promise to every carrier: any id the receiver answers 202 for reaches an HTTP
 * endpoint, a JetStream stream and a RabbitMQ queue, each under its message id, with the id as
 * sent in the body. Before the message id was formed (forwarding/message-id.ts), `tts_日本語`
 * failed every HTTP attempt, a newline HTTP and NATS, 250 characters AMQP.
 */
let destinations: ThreeDestinations;
let pipeline: TestPipeline;
let redis: Redis;

beforeAll(async () => {
  redis = new Redis(process.env.REDIS_URL ?? '');
  destinations = await startThreeDestinations();
  pipeline = await startTestPipeline({}, undefined, {
    ...destinations.env,
    FORWARD_ATTEMPTS: '2',
    FORWARD_BACKOFF_MS: '20',
  });
}, 60_000);

afterAll(async () => {
  await pipeline.close();
  await destinations.close();
  await deleteKeys(redis, `${pipeline.receiver.config.queuePrefix}:*`);
  redis.disconnect();
});

/** Well-formed Unicode (no lone surrogates: the receiver refuses those), any length to 2,000. */
const anyId = fc.oneof(
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }),
  fc.string({
    unit: fc.constantFrom('a', '\n', '\r', ' ', 'é', '日', '😀', '\u0000', '"'),
    minLength: 1,
    maxLength: 300,
  }),
  fc.integer({ min: 180, max: 2000 }).map((n) => 'x'.repeat(n)),
);

/**
 * The rule, written here apart from forwarding/message-id.ts: `<event>:<data.id>` when that is
 * printable ASCII (`!` to `~`) of at most 200 bytes, else `<event>:sha256:<hex of the UTF-8 id>`.
 */
function expectedMessageId(event: string, id: string): string {
  const plain = `${event}:${id}`;
  // Byte by byte: any non-ASCII character's UTF-8 bytes are all 0x80 or above.
  const bytes = Buffer.from(plain, 'utf8');
  if (bytes.every((b) => b >= 0x21 && b <= 0x7e) && bytes.length <= 200) return plain;
  return `${event}:sha256:${createHash('sha256').update(Buffer.from(id, 'utf8')).digest('hex')}`;
}

async function forwardedEverywhere(id: string, event: string): Promise<void> {
  const expected = expectedMessageId(event, id);
  const { endpoint, stream, rabbit } = destinations;
  const arrived = (inbox: ThreeDestinations['endpoint']['inbox']) =>
    inbox.messages.find((m) => m.body.id === id && m.body.type === event);
  const all = [endpoint.inbox, stream.inbox, rabbit.inbox];
  for (;;) {
    const found = all.map(arrived);
    if (found.every((m) => m !== undefined)) {
      expect(found.map((m) => m.id)).toEqual([expected, expected, expected]);
      return;
    }
    const counts = all.map((inbox) => inbox.messages.length);
    await Promise.race(all.map((inbox, i) => inbox.atLeast((counts[i] ?? 0) + 1)));
  }
}

it.each(['tts_日本語', 'a\nb', 'y'.repeat(250), 'z'.repeat(20_000)])(
  '%#: an id no carrier holds as it is reaches every destination, under a hash of it',
  async (id) => {
    await pipeline.post({ event: 'key.revoked', data: { id } }).expect(202);
    await forwardedEverywhere(id, 'key.revoked');
    expect(await pipeline.cli('failures', '--json')).toMatchObject({ stdout: '[]\n' });
    // None of these is carried as it is: each arrives under the hash.
    expect(expectedMessageId('key.revoked', id)).toMatch(/^key\.revoked:sha256:[0-9a-f]{64}$/);
  },
  30_000,
);

it('any accepted id reaches every destination kind', async () => {
  const seen = new Set<string>();
  await fc.assert(
    fc.asyncProperty(anyId, async (id) => {
      fc.pre(!seen.has(id));
      seen.add(id);
      await pipeline.post({ event: 'audio.failed', data: { id } }).expect(202);
      await forwardedEverywhere(id, 'audio.failed');
    }),
    // Stopped by the time limit is a failure, not a pass on fewer ids: 100 runs take a few
    // seconds, the limit only catches a hang.
    { numRuns: 100, interruptAfterTimeLimit: 60_000, markInterruptAsFailure: true },
  );
  expect(destinations.endpoint.rejected).toEqual([]);
  expect(JSON.parse((await pipeline.cli('failures', '--json')).stdout)).toEqual(
    expect.not.arrayContaining([expect.objectContaining({ kind: 'forward' })]),
  );
}, 120_000);
