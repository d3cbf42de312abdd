import { randomUUID } from 'node:crypto';
import { Queue, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import pino from 'pino';
import type { Delivery } from '../../src/provider-spec/delivery';
import { readTimeline } from '../../src/inspector/timeline-queries';
import {
  deliveryOf,
  deliveryJobData,
  type DeliveryJobData,
} from '../../src/queue/delivery-job-data';
import { deliveryTimeline, type DeliveryTimeline } from '../../src/history/delivery-timeline';
import type { AudioMetadata } from '../../src/storage/audio-store';
import { createStepWriter, type StepWriterOptions } from '../../src/worker/timeline-steps';
import { startPrivateRedis, type PrivateRedis } from '../../harness/private-redis';
import { deliveryKeys } from '../../src/queue/delivery-keys';

/**
 * The worker's timeline steps as one run writes them: the steps an attempt notes wait for the
 * step that ends it (one Redis call), each at its own time, unless the attempt runs past the
 * delay (then it is shown active) or a destination's step follows `stored`. A Redis of the
 * test's own, so the scripts counted are these alone.
 */
let server: PrivateRedis;
let redis: Redis;
let queue: Queue<DeliveryJobData>;
const PREFIX = 'steps';
const logger = pino({ level: 'silent' });

beforeAll(async () => {
  server = await startPrivateRedis();
  redis = new Redis(server.url);
  queue = new Queue<DeliveryJobData>('deliveries', { connection: redis, prefix: PREFIX });
  await queue.waitUntilReady();
});

afterAll(async () => {
  await queue.close();
  redis.disconnect();
  await server.stop();
});

/** Scripts the server has run so far (EVALSHA, and EVAL where it did not have the script yet). */
async function scripts(): Promise<number> {
  const stats = await redis.info('commandstats');
  const calls = (name: string) =>
    Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
  return calls('evalsha') + calls('eval');
}

/** A real queued job of a new `audio.ready` delivery, taken for its first run, and its delivery. */
async function takenJob(): Promise<{ job: Job<DeliveryJobData>; id: string; delivery: Delivery }> {
  const id = `steps-${randomUUID()}`;
  const body = JSON.stringify({
    event: 'audio.ready',
    created_at: new Date().toISOString(),
    data: { id, audio_url: 'https://cdn.example.com/a.mp3', duration_seconds: 1, format: 'mp3' },
  });
  const job = await queue.add('audio.ready', deliveryJobData(body, new Date()));
  job.attemptsStarted = 1;
  const delivery = deliveryOf(job.data);
  if (delivery === undefined) throw new Error('the job carries no delivery');
  return { job, id, delivery };
}

/** The timeline, and a promise of each step write as it settles. */
function watchedTimeline() {
  const timeline = deliveryTimeline(redis, deliveryKeys(PREFIX).placeOf, 60_000);
  const writes: Promise<void>[] = [];
  let wrote: () => void = () => undefined;
  let next = new Promise<void>((resolve) => (wrote = resolve));
  const watched: DeliveryTimeline = {
    ...timeline,
    write: async (subject, step) => {
      const write = timeline.write(subject, step);
      writes.push(write);
      await write.finally(() => {
        wrote();
        next = new Promise<void>((resolve) => (wrote = resolve));
      });
    },
  };
  return { timeline: watched, writes, written: () => next };
}

function recorderFor(timeline: DeliveryTimeline, options: Partial<StepWriterOptions> = {}) {
  return createStepWriter(timeline, logger, { forwards: false, ...options });
}

const STORED: AudioMetadata = {
  id: 'a',
  event: 'audio.ready',
  audio_url: 'https://cdn.example.com/a.mp3',
  final_url: 'https://cdn.example.com/a.mp3',
  file: 'a.mp3',
  bytes: 1,
  sha256: 'ab',
  content_type: 'audio/mpeg',
  downloaded_at: new Date().toISOString(),
  received_at: new Date().toISOString(),
  job_id: '1',
};
const stepsOf = async (id: string) =>
  (await readTimeline(redis, deliveryKeys(PREFIX).placeOf('audio.ready', id)))?.steps.map(
    (s) => s.step,
  );

it('an attempt that ends within the delay: its attempt, stored and handled steps go in one call, each at its own time', async () => {
  const { timeline } = watchedTimeline();
  const recorder = recorderFor(timeline);
  const { job, id, delivery } = await takenJob();
  const before = await scripts();
  const started = Date.now();
  recorder.started(job, delivery);
  recorder.stored(job, delivery, STORED);
  await recorder.handled(job, delivery);
  recorder.ended(job);
  expect((await scripts()) - before).toBe(1);

  const record = await readTimeline(redis, deliveryKeys(PREFIX).placeOf('audio.ready', id));
  expect(record?.summary.state).toBe('handled');
  expect(record?.summary.attempts).toBe(1);
  expect(record?.steps.map((s) => s.step)).toEqual(['attempt', 'stored', 'handled']);
  const at = record?.steps.map((s) => Date.parse(s.at)) ?? [];
  expect(at[0]).toBeGreaterThanOrEqual(started);
  expect([...at].sort((a, b) => a - b)).toEqual(at);
  expect(record?.stored).toMatchObject({ key: 'a.mp3', sha256: 'ab' });
});

it('an attempt still running after the delay is shown active, its step at the time it began', async () => {
  // Long enough that the attempt's own time cannot be mistaken for the time it was written.
  const DELAY_MS = 200;
  const { timeline, written } = watchedTimeline();
  const recorder = recorderFor(timeline, { attemptNotedAfterMs: DELAY_MS });
  const { job, id, delivery } = await takenJob();
  const flushed = written();
  const began = Date.now();
  recorder.started(job, delivery);
  await flushed;
  const running = await readTimeline(redis, deliveryKeys(PREFIX).placeOf('audio.ready', id));
  expect(running?.summary.state).toBe('active');
  expect(running?.summary.attempts).toBe(1);
  expect(running?.steps.map((s) => s.step)).toEqual(['attempt']);
  // Noted when the attempt began, not when the delay let it be written.
  expect(Date.parse(running?.steps[0]?.at ?? '') - began).toBeLessThan(DELAY_MS);

  recorder.stored(job, delivery, STORED);
  await recorder.handled(job, delivery);
  recorder.ended(job);
  expect(await stepsOf(id)).toEqual(['attempt', 'stored', 'handled']);
});

it('a run that throws: what it noted is written when it ends, before the failure', async () => {
  const { timeline, writes } = watchedTimeline();
  const recorder = recorderFor(timeline);
  const { job, id, delivery } = await takenJob();
  recorder.started(job, delivery);
  recorder.ended(job);
  recorder.failed(job, 'the CDN answered 503', false);
  await Promise.all(writes);
  const record = await readTimeline(redis, deliveryKeys(PREFIX).placeOf('audio.ready', id));
  expect(record?.steps.map((s) => s.step)).toEqual(['attempt', 'attempt_failed']);
  // Queued again for its retry, not left active by the attempt's step written last.
  expect(record?.summary.state).toBe('queued');
});

it('with destinations, stored is written at once (before their steps), the attempt with it', async () => {
  const { timeline, writes } = watchedTimeline();
  const recorder = recorderFor(timeline, { forwards: true });
  const { job, id, delivery } = await takenJob();
  const before = await scripts();
  recorder.started(job, delivery);
  recorder.stored(job, delivery, STORED);
  await Promise.all(writes);
  expect((await scripts()) - before).toBe(1);
  const record = await readTimeline(redis, deliveryKeys(PREFIX).placeOf('audio.ready', id));
  expect(record?.summary.state).toBe('active');
  expect(record?.steps.map((s) => s.step)).toEqual(['attempt', 'stored']);
  await recorder.handled(job, delivery);
  recorder.ended(job);
  expect(await stepsOf(id)).toEqual(['attempt', 'stored', 'handled']);
});

it('a run taken over from a worker that stopped: its cut-off attempt and its own are written at once, in one call', async () => {
  const { timeline, writes } = watchedTimeline();
  const recorder = recorderFor(timeline);
  const { job, id, delivery } = await takenJob();
  job.attemptsStarted = 2;
  const before = await scripts();
  recorder.started(job, delivery);
  await Promise.all(writes);
  expect((await scripts()) - before).toBe(1);
  const record = await readTimeline(redis, deliveryKeys(PREFIX).placeOf('audio.ready', id));
  expect(record?.summary.state).toBe('active');
  expect(record?.summary.attempts).toBe(2);
  expect(record?.steps.map((s) => s.step)).toEqual(['attempt_failed', 'attempt']);
  expect(record?.steps[0]?.detail).toMatch(/attempt 1 never ended/);
  recorder.ended(job);
});
