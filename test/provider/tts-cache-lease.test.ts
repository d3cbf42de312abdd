import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { createTtsCache, type BlobArea, type CachedAudio } from '../../src/provider/tts-cache';
import { deleteKeys } from '../helpers/test-receiver';

// Two processes' caches on one Redis. A holder that stalls past its lease (another took over and
// called the provider) stops: its call is aborted, it writes nothing, and it is given the new
// holder's answer.
const prefix = `test-${randomUUID()}`;
let redis: Redis;
beforeAll(() => {
  redis = new Redis(process.env.REDIS_URL ?? '', { maxRetriesPerRequest: null });
});
afterAll(async () => {
  await deleteKeys(redis, `${prefix}:*`);
  redis.disconnect();
});

/** Bodies in memory: the area is where bytes go, not what is tested here. */
function memoryArea(): BlobArea {
  const bodies = new Map<string, Buffer>();
  return {
    put: (name, bytes) => Promise.resolve(void bodies.set(name, bytes)),
    get: (name) => Promise.resolve(bodies.get(name)),
    removeOlderThan: () => Promise.resolve(0),
  };
}

/** This test's areas never fail: a failure told to the cache fails the test. */
const noTrouble = (what: string, error: unknown) => {
  throw new Error(`the TTS cache could not ${what}`, { cause: error });
};

const audio = (text: string): CachedAudio => ({
  audio: Buffer.from(text),
  contentType: 'audio/wav',
});

it('a holder that lost its lease is aborted, writes nothing, and gets the new holder’s answer', async () => {
  const area = memoryArea();
  const first = createTtsCache(redis, prefix, 60, area, noTrouble);
  const second = createTtsCache(redis, prefix, 60, area, noTrouble);
  const hash = first.hash({ text: 'hello', voice: 'alloy' });
  const lease = `${prefix}:provider:tts:${hash}:lease`;

  let firstAborted = false;
  let calledFirst!: () => void;
  const firstCalling = new Promise<void>((resolve) => (calledFirst = resolve));
  const firstAnswer = first.get(hash, async (signal) => {
    calledFirst();
    // The provider answers this holder only after its lease went elsewhere.
    await new Promise<void>((resolve) => {
      signal.addEventListener('abort', () => {
        resolve();
      });
    });
    firstAborted = true;
    return audio('first, too late');
  });
  await firstCalling;
  // As a stall past LEASE_MS would: the lease expires and another process takes it.
  await redis.del(lease);
  const secondAnswer = await second.get(hash, () => Promise.resolve(audio('second')));

  expect(secondAnswer.audio.toString()).toBe('second');
  expect((await firstAnswer).audio.toString()).toBe('second');
  expect(firstAborted).toBe(true);
  // The index names the second holder's body, and a third asker is served it without a call.
  const third = await createTtsCache(redis, prefix, 60, area, noTrouble).get(hash, () =>
    Promise.reject(new Error('called the provider again')),
  );
  expect(third.audio.toString()).toBe('second');
});
