import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { events as exampleEvents } from '../../src/examples/events';
import { jobItemId } from '../../src/queue/delivery-job-data';
import { customEvents } from '../../src/hooks/custom-events';
import { defineEvent } from '../../src/hooks/define-event';
import type { HookContext } from '../../src/hooks/hook-context';
import { archivedEntries } from '../../harness/archive-entries';
import { audio, startLocalCdn, type LocalCdn } from '../../harness/local-cdn';
import { startTestPipeline, type TestPipeline } from '../helpers/test-pipeline';

// A fork's events (the example voice.converted, and two of the test's own), received and handled
// exactly as built-in ones: validated, deduplicated, stored, handled once, retried on a throw.
const WAV = Buffer.from('RIFF custom event audio');
const ADMIN_PASSWORD = 'dashboard-secret-for-the-context-test';
let cdn: LocalCdn;
let pipeline: TestPipeline;
const contexts: HookContext[] = [];
let flakyRuns = 0;
const replayRuns: { note: string; delivery: HookContext['delivery'] }[] = [];
let replayRan: (() => void) | undefined;
const transformedRuns: { id: string; duration: number; text: string; replay: boolean }[] = [];
let transformedRan: (() => void) | undefined;

const testEvents = [
  ...exampleEvents,
  defineEvent({
    name: 'context.seen',
    data: z.object({ id: z.string() }),
    handle(_event, context) {
      contexts.push(context);
      return Promise.resolve();
    },
  }),
  defineEvent({
    name: 'replayed.event',
    data: z.object({ id: z.string(), note: z.string() }),
    handle(event, context) {
      replayRuns.push({ note: event.data.note, delivery: context.delivery });
      replayRan?.();
      return Promise.resolve();
    },
  }),
  // A schema that transforms: applied twice, `duration` would fail as a number and `text` would
  // be bracketed twice.
  defineEvent({
    name: 'transformed.event',
    data: z.object({
      id: z.string(),
      duration: z.string().transform(Number),
      text: z.string().transform((text) => `[${text}]`),
    }),
    handle(event, context) {
      transformedRuns.push({ ...event.data, replay: context.delivery.replay });
      transformedRan?.();
      return Promise.resolve();
    },
  }),
  defineEvent({
    name: 'flaky.event',
    data: z.object({ id: z.string() }),
    handle() {
      flakyRuns += 1;
      return flakyRuns === 1 ? Promise.reject(new Error('first run fails')) : Promise.resolve();
    },
  }),
];

beforeAll(async () => {
  cdn = await startLocalCdn();
  cdn.route('/vc.wav', audio(WAV, 'audio/wav'));
  pipeline = await startTestPipeline(
    {
      CDN_URL: cdn.origin,
      DOWNLOAD_ALLOW_PRIVATE_IPS: 'true',
      ADMIN_PASSWORD,
      WEBHOOK_SECRETS: 'whsec_test_secret',
    },
    cdn.ca,
    {},
    { customEvents: customEvents(testEvents) },
  );
});
afterAll(async () => {
  await pipeline.close();
  await cdn.close();
});

it('voice.converted: 202, then 200 duplicate; the handler downloads its audio into the store once', async () => {
  const id = `vc-${randomUUID()}`;
  const delivery = {
    event: 'voice.converted',
    data: { id, audio_url: `${cdn.origin}/vc.wav`, voice: 'sage' },
  };
  await pipeline.post(delivery).expect(202, { received: true, duplicate: false });
  await pipeline.post(delivery).expect(200, { received: true, duplicate: true });
  expect(await pipeline.settled(id)).toMatchObject({ state: 'completed' });
  expect(readFileSync(join(pipeline.audioDir, `${id}.wav`)).equals(WAV)).toBe(true);
  const metadata = JSON.parse(
    readFileSync(join(pipeline.audioDir, `${id}.json`), 'utf8'),
  ) as object;
  expect(metadata).toMatchObject({
    id,
    event: 'voice.converted',
    voice: 'sage',
    bytes: WAV.length,
    sha256: createHash('sha256').update(WAV).digest('hex'),
    content_type: 'audio/wav',
  });
  expect(cdn.hits.get('/vc.wav')).toBe(1);
});

it('data that fails the schema: 400 naming the problem, nothing queued', async () => {
  const res = await pipeline
    .post({ event: 'voice.converted', data: { id: 'vc-bad', audio_url: 'ftp://x/a.wav' } })
    .expect(400);
  expect((res.body as { detail: string }).detail).toMatch(
    /^invalid voice\.converted delivery: data\.audio_url: .*; data\.voice: /,
  );
  const jobs = await pipeline.receiver.queue.getJobs(['waiting', 'active', 'completed', 'failed']);
  expect(jobs.filter((job) => jobItemId(job.data) === 'vc-bad')).toEqual([]);
});

it('a handle that throws is retried like a built-in handler', async () => {
  const id = `flaky-${randomUUID()}`;
  await pipeline.post({ event: 'flaky.event', data: { id } }).expect(202);
  expect(await pipeline.settled(id)).toMatchObject({ state: 'completed' });
  expect(flakyRuns).toBe(2);
});

it('the context holds what hooks need and no setting, so no secret', async () => {
  const id = `ctx-${randomUUID()}`;
  await pipeline.post({ event: 'context.seen', data: { id } }).expect(202);
  await pipeline.settled(id);
  const [context] = contexts;
  // The store read-only: a hook can read audio, never write it, clean temps or wipe the archive.
  expect(Object.keys(context?.store ?? {}).sort()).toEqual(['holds', 'read', 'readMetadata']);
  expect(Object.keys(context ?? {}).sort()).toEqual([
    'delivery',
    'downloadAudio',
    'failures',
    'logger',
    'revocations',
    'store',
  ]);
  expect(context?.delivery).toEqual({
    jobId: expect.any(String),
    event: 'context.seen',
    id,
    // data as the provider wrote it: its numbers as sent, for a record of the fork's own.
    dataText: JSON.stringify({ id }),
    receivedAt: expect.any(String),
    attempt: 1,
    replay: false,
    firstRun: true,
  });
  const everything = JSON.stringify(context, (_key, value: unknown) =>
    typeof value === 'function' ? String(value) : value,
  );
  expect(everything).not.toContain(ADMIN_PASSWORD);
  expect(everything).not.toContain('whsec_test_secret');
});

it("a replay runs a custom event's handle again, with the delivery as accepted and context.delivery.replay", async () => {
  const id = `replay-${randomUUID()}`;
  await pipeline.post({ event: 'replayed.event', data: { id, note: 'as sent' } }).expect(202);
  await pipeline.settled(id);
  const again = new Promise<void>((resolve) => (replayRan = resolve));
  const replay = await pipeline.cli('replay', '--id', id);
  expect(replay).toEqual({
    code: 0,
    stdout: '1 delivery put on the queue again\n',
    stderr: expect.stringMatching(
      /^replay: 1 looked at, 1 queued, 0 already queued \(hour \d+ of \d+\)\n$/,
    ),
  });
  await again;
  expect(replayRuns.map((run) => [run.note, run.delivery.replay])).toEqual([
    ['as sent', false],
    ['as sent', true],
  ]);
  expect(replayRuns[1]?.delivery.receivedAt).toBe(replayRuns[0]?.delivery.receivedAt);
});

it('a schema that transforms is applied once: by the worker, and again only on a replay of what was sent', async () => {
  const id = `transformed-${randomUUID()}`;
  const sent = { event: 'transformed.event', data: { id, duration: '2.5', text: 'hi' } };
  await pipeline.post(sent).expect(202);
  expect(await pipeline.settled(id)).toMatchObject({ state: 'completed' });
  // What was queued and archived is what the provider sent, not the schema's output (a handled
  // job keeps a record of its delivery, not its body: the archive keeps the body).
  const entry = archivedEntries(join(pipeline.audioDir, '.archive')).find((e) => e.id === id);
  expect(entry?.delivery).toEqual(sent);

  const again = new Promise<void>((resolve) => (transformedRan = resolve));
  expect(await pipeline.cli('replay', '--id', id)).toMatchObject({ code: 0 });
  await again;
  expect(transformedRuns.filter((run) => run.id === id)).toEqual([
    { id, duration: 2.5, text: '[hi]', replay: false },
    { id, duration: 2.5, text: '[hi]', replay: true },
  ]);
});
