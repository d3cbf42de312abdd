import { mkdtempSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { SETTINGS } from '../../src/settings';
import { serve } from '../../src/http-server/serve';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';
import { eventually } from '../../src/util/eventually';
import { findDelivery } from '../../src/inspector/find-delivery';
import { timelineKeys } from '../../src/history/delivery-timeline';
import { audio, type LocalCdn } from '../../harness/local-cdn';
import type { TestPipeline } from '../helpers/test-pipeline';
import {
  forgetTimeline,
  removeMarkedJob,
  startInspectorBed,
  type InspectorBed,
} from '../helpers/inspector-bed';
import { createTestReceiver } from '../helpers/test-receiver';

/**
 * The delivery inspector's JSON API (docs/operations.md, "Every route of the inspector") over a real pipeline:
 * receiver and workers on the test Redis, a real HTTPS CDN, a real forward destination.
 */
const PASSWORD = 'inspector test password';
const auth = `Basic ${Buffer.from(`admin:${PASSWORD}`).toString('base64')}`;

let bed: InspectorBed;
let cdn: LocalCdn;
let pipeline: TestPipeline;
let base: string;
let destination: string;

beforeAll(async () => {
  bed = await startInspectorBed(PASSWORD);
  ({ cdn, pipeline, destination } = bed);
  base = `http://127.0.0.1:${bed.server.port}`;
});

afterAll(async () => {
  await bed.close();
});

const api = (path: string) => request(base).get(`/admin/api${path}`).set('Authorization', auth);
const post = (path: string, origin = base) =>
  request(base).post(`/admin/api${path}`).set('Authorization', auth).set('Origin', origin);
const detailPath = (event: string, id: string) =>
  `/deliveries/${encodeURIComponent(event)}/${encodeURIComponent(id)}`;

interface Detail {
  state: string;
  attempts: number;
  duplicates: number;
  payload: unknown;
  stored: unknown;
  timeline: { at: string; step: string; detail: string }[];
  forwards: { destination: string; state: string; attempts: number; last_error: string | null }[];
}

/** The delivery's detail once `ready` says it is what the test waits for. */
async function detailWhen(event: string, id: string, ready: (d: Detail) => boolean, what: string) {
  return await eventually(
    async () => {
      const res = await api(detailPath(event, id));
      const body = res.body as Detail;
      return res.status === 200 && ready(body) ? body : undefined;
    },
    { timeoutMs: 15_000 },
  ).catch((error: unknown) => {
    throw new Error(`${id}: ${what} not seen within 15 s`, { cause: error });
  });
}

const steps = (d: Detail) => d.timeline.map((s) => s.step);

it('a handled delivery, re-sent twice: found by id alone, its whole path in order', async () => {
  const id = 'inspect-handled/1 ü';
  cdn.route('/inspect/handled.mp3', audio(Buffer.from('ID3 handled audio')));
  const delivery = sampleDelivery('audio.ready', {
    id,
    data: { audio_url: `${cdn.origin}/inspect/handled.mp3` },
  });
  // Paused for every worker: the re-sends arrive before the first attempt, in a known order.
  await pipeline.receiver.queue.pause();
  await pipeline.post(delivery).expect(202);
  await pipeline.post(delivery).expect(200);
  await pipeline.post(delivery).expect(200);
  await pipeline.receiver.queue.resume();
  expect(await pipeline.settled(id)).toMatchObject({ state: 'completed' });
  const detail = await detailWhen(
    'audio.ready',
    id,
    (d) => d.forwards.some((f) => f.state === 'sent'),
    'its forward',
  );

  const found = await api(`/deliveries?id=${encodeURIComponent(id)}`).expect(200);
  expect(found.body).toEqual({
    deliveries: [
      {
        event: 'audio.ready',
        id,
        received_at: expect.any(String),
        state: 'handled',
        attempts: 1,
        duplicates: 2,
        forwards: { [destination]: 'sent' },
      },
    ],
    next_cursor: null,
  });
  expect(detail).toMatchObject({ state: 'handled', attempts: 1, duplicates: 2 });
  expect(detail.payload).toEqual(JSON.parse(JSON.stringify(delivery)));
  expect(detail.stored).toEqual({
    key: expect.stringMatching(/\.mp3$/),
    bytes: 17,
    sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    content_type: 'audio/mpeg',
  });
  // Forwarded from the job itself (before `handled`) or by a forward job (after it).
  expect(steps(detail).filter((s) => s !== 'forwarded')).toEqual([
    'received',
    'duplicate',
    'duplicate',
    'attempt',
    'stored',
    'handled',
  ]);
  expect(steps(detail).indexOf('forwarded')).toBeGreaterThan(steps(detail).indexOf('stored'));
  expect(detail.timeline[0]?.detail).toMatch(/^signed with WEBHOOK_SECRETS index 0, /);
  expect(detail.forwards).toEqual([{ destination, state: 'sent', attempts: 1, last_error: null }]);
  const times = detail.timeline.map((s) => Date.parse(s.at));
  expect([...times].sort((a, b) => a - b)).toEqual(times);
});

it('a delivery read while its job completes: its `handled` step is there, not a timeline read before it under the job’s state', async () => {
  const id = `inspect-race-${Date.now()}`;
  const { queue, redis } = pipeline.receiver;
  // Its job waits, so the interleaving below is staged, not left to the scheduler.
  await queue.pause();
  await pipeline.post(sampleDelivery('key.revoked', { id })).expect(202);
  const done = pipeline.settled(id);
  const timelineKey = timelineKeys(queue.layout.placeOf('key.revoked', id)).timeline;
  let staged = false;
  // The timeline is read, then the worker writes `handled` and completes the job, then the
  // job's state is read: what a busy machine does between the two reads.
  const racing = new Proxy(redis, {
    get(target, name) {
      const value: unknown = Reflect.get(target, name, target);
      if (typeof value !== 'function') return value;
      if (name !== 'get') return (value as (...args: unknown[]) => unknown).bind(target);
      return async (key: string) => {
        const got: unknown = await value.call(target, key);
        if (key === timelineKey && !staged) {
          staged = true;
          await queue.resume();
          await done;
        }
        return got;
      };
    },
  });
  const found = await findDelivery(
    { redis: racing, queues: [queue], dedupeTtlSeconds: 3600 },
    'key.revoked',
    id,
  );
  expect(staged).toBe(true);
  expect(found?.timeline.summary.state).toBe('handled');
  expect(found?.timeline.steps.map((step) => step.step)).toContain('handled');
});

it('a failed delivery: each failed attempt with its reason, listed as failed, retried, then handled', async () => {
  const id = `inspect-failed-${Date.now()}`;
  cdn.route('/inspect/flaky.mp3', (_req, res) => res.writeHead(503).end());
  await pipeline
    .post(
      sampleDelivery('audio.ready', { id, data: { audio_url: `${cdn.origin}/inspect/flaky.mp3` } }),
    )
    .expect(202);
  expect(await pipeline.settled(id)).toMatchObject({ state: 'failed' });
  const failed = await detailWhen('audio.ready', id, (d) => d.state === 'failed', 'failed');
  expect(steps(failed)).toEqual([
    'received',
    'attempt',
    'attempt_failed',
    'attempt',
    'attempt_failed',
    'failed',
  ]);
  expect(failed.timeline[2]?.detail).toMatch(/503/);
  expect(failed.attempts).toBe(2);

  const list = await api('/deliveries?state=failed').expect(200);
  const listed = (list.body as { deliveries: { id: string; state: string }[] }).deliveries;
  expect(listed[0]).toMatchObject({ id, state: 'failed' });
  expect(listed.every((d) => d.state === 'failed')).toBe(true);

  // Not handled: no replay; no retry from elsewhere.
  await post(`${detailPath('audio.ready', id)}/replay`).expect(409);
  const forged = await post(`${detailPath('audio.ready', id)}/retry`, 'https://evil.example');
  expect(forged.status).toBe(403);
  expect(forged.body).toEqual({ detail: expect.any(String) });

  cdn.route('/inspect/flaky.mp3', audio(Buffer.from('ID3 at last')));
  const done = pipeline.settled(id);
  await post(`${detailPath('audio.ready', id)}/retry`).expect(202);
  const handled = await detailWhen('audio.ready', id, (d) => d.state === 'handled', 'handled');
  expect(steps(handled).slice(-5)).toEqual([
    'retried',
    'attempt',
    'stored',
    'forwarded',
    'handled',
  ]);
  void done;
  // Handled now: a second retry is refused.
  await post(`${detailPath('audio.ready', id)}/retry`).expect(409);
  const again = await api('/deliveries?state=failed').expect(200);
  expect(
    (again.body as { deliveries: { id: string }[] }).deliveries.map((d) => d.id),
  ).not.toContain(id);
});

/** What a search by id lists of it. */
const searched = async (id: string) =>
  (
    (await api(`/deliveries?id=${encodeURIComponent(id)}`).expect(200)).body as {
      deliveries: unknown[];
    }
  ).deliveries;

it('no timeline record (accepted before timelines, or expired): the detail and the search read its job', async () => {
  const id = `inspect-job-only-${Date.now()}`;
  cdn.route('/inspect/job-only.mp3', (_req, res) => res.writeHead(503).end());
  const delivery = sampleDelivery('audio.ready', {
    id,
    data: { audio_url: `${cdn.origin}/inspect/job-only.mp3` },
  });
  await pipeline.post(delivery).expect(202);
  await detailWhen('audio.ready', id, (d) => d.state === 'failed', 'failed');
  await forgetTimeline(pipeline, 'audio.ready', id);

  const res = await api(detailPath('audio.ready', id));
  expect(res.status).toBe(200);
  const detail = res.body as Detail & { received_at: string };
  expect(detail).toMatchObject({
    event: 'audio.ready',
    id,
    state: 'failed',
    attempts: 2,
    duplicates: 0,
    stored: null,
    forwards: [],
  });
  expect(detail.payload).toEqual(JSON.parse(JSON.stringify(delivery)));
  expect(steps(detail)).toEqual(['received', 'failed']);
  expect(detail.timeline[1]?.detail).toMatch(/503/);
  expect(await searched(id)).toEqual([
    {
      event: 'audio.ready',
      id,
      received_at: detail.received_at,
      state: 'failed',
      attempts: 2,
      duplicates: 0,
      forwards: {},
    },
  ]);
});

it('no record and no job, only its dedupe mark: found, its state and its archived payload', async () => {
  const id = `inspect-mark-only-${Date.now()}`;
  const delivery = sampleDelivery('key.revoked', { id });
  await pipeline.post(delivery).expect(202);
  await detailWhen('key.revoked', id, (d) => d.state === 'handled', 'handled');
  await forgetTimeline(pipeline, 'key.revoked', id);
  await removeMarkedJob(pipeline, 'key.revoked', id);

  const res = await api(detailPath('key.revoked', id));
  expect(res.status).toBe(200);
  const detail = res.body as Detail & { received_at: string };
  expect(detail).toMatchObject({ event: 'key.revoked', id, state: 'handled', forwards: [] });
  expect(Math.abs(Date.parse(detail.received_at) - Date.now())).toBeLessThan(60_000);
  expect(detail.payload).toEqual(JSON.parse(JSON.stringify(delivery)));
  expect(steps(detail)).toEqual(['received']);
  expect(await searched(id)).toEqual([expect.objectContaining({ id, state: 'handled' })]);
});

it('replay runs a handled delivery again, as `replay` does', async () => {
  const id = `inspect-replay-${Date.now()}`;
  await pipeline.post(sampleDelivery('key.revoked', { id })).expect(202);
  await detailWhen('key.revoked', id, (d) => d.state === 'handled', 'handled');
  await post(`${detailPath('key.revoked', id)}/replay`).expect(202);
  const replayed = await detailWhen(
    'key.revoked',
    id,
    (d) => steps(d).filter((s) => s === 'handled').length === 2,
    'the replay handled',
  );
  expect(steps(replayed)).toContain('replayed');
  expect(replayed.timeline.find((s) => s.step === 'replayed')?.detail).toMatch(
    /^queued again from the archive as job [0-9a-f-]{36}$/,
  );
});

it('pauses and resumes a destination for every worker, as `forward pause` does', async () => {
  await post(`/destinations/${encodeURIComponent(destination)}/pause`).expect(202);
  expect(await bed.destinationState()).toBe('paused');
  await post(`/destinations/${encodeURIComponent(destination)}/resume`).expect(202);
  expect(await bed.destinationState()).toBe('active');
  await post('/destinations/nowhere/pause').expect(404);
});

it('lists newest first, a page at a time with an opaque cursor; bad filters are 400', async () => {
  const ids = [1, 2, 3].map((n) => `inspect-page-${Date.now()}-${n}`);
  for (const id of ids) await pipeline.post(sampleDelivery('key.revoked', { id })).expect(202);
  const pages: string[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 3; i++) {
    const res = await api(
      `/deliveries?event=key.revoked&limit=1${cursor === null ? '' : `&cursor=${cursor}`}`,
    ).expect(200);
    const body = res.body as { deliveries: { id: string }[]; next_cursor: string | null };
    pages.push(...body.deliveries.map((d) => d.id));
    cursor = body.next_cursor;
  }
  expect(pages).toEqual([...ids].reverse());
  // By time: a datetime-local field's value (no zone: UTC), an ISO time, milliseconds.
  const within = async (query: string) =>
    (
      (await api(`/deliveries?event=key.revoked&${query}`).expect(200)).body as {
        deliveries: { id: string }[];
      }
    ).deliveries.map((d) => d.id);
  const inAnHour = new Date(Date.now() + 3_600_000).toISOString().slice(0, 16);
  expect(await within(`since=${inAnHour}`)).toEqual([]);
  expect(await within('until=2000-01-01T00:00:00Z')).toEqual([]);
  expect(await within(`since=${Date.now() - 60_000}`)).toEqual(expect.arrayContaining(ids));
  await api('/deliveries?limit=201').expect(400);
  await api('/deliveries?state=lost').expect(400);
  await api('/deliveries?since=yesterday-ish').expect(400);
  await api(detailPath('audio.ready', 'never-sent')).expect(404);
  await request(base).get('/admin/api/deliveries').expect(401);
});

it('a cursor that cannot be read is 400 naming it, on the API and the page, not the first page again', async () => {
  const id = `inspect-cursor-${Date.now()}`;
  await pipeline.post(sampleDelivery('key.revoked', { id })).expect(202);
  await detailWhen('key.revoked', id, (d) => d.state === 'handled', 'handled');
  for (const cursor of ['not-a-cursor', Buffer.from('{"score":1}').toString('base64url')]) {
    const res = await api(`/deliveries?cursor=${cursor}`);
    expect({ status: res.status, body: res.body as unknown }).toEqual({
      status: 400,
      body: { detail: expect.stringMatching(/^cursor /) },
    });
    const page = await request(base)
      .get(`/admin/deliveries?cursor=${cursor}`)
      .set('Authorization', auth);
    expect(page.status).toBe(400);
    expect(page.text).toContain((res.body as { detail: string }).detail);
    expect(page.text).not.toContain(id);
  }
});

it('a search by id is narrowed by the other filters too, as the list is', async () => {
  const id = `inspect-narrowed-${Date.now()}`;
  await pipeline.post(sampleDelivery('key.revoked', { id })).expect(202);
  await detailWhen('key.revoked', id, (d) => d.state === 'handled', 'handled');
  const ids = async (query: string) =>
    (
      (await api(`/deliveries?id=${id}&${query}`).expect(200)).body as {
        deliveries: { id: string }[];
      }
    ).deliveries.map((d) => d.id);
  expect(await ids('state=handled')).toEqual([id]);
  expect(await ids('state=failed')).toEqual([]);
  expect(await ids('destination=nowhere')).toEqual([]);
  expect(await ids(`since=${Date.now() + 3_600_000}`)).toEqual([]);
  expect(await ids('until=2000-01-01T00:00:00Z')).toEqual([]);
  expect(await ids(`since=${Date.now() - 60_000}`)).toEqual([id]);
});

it("a receiver's own FORWARD_URLS and FORWARD_CONFIG are destinations it controls, and declared read by web", async () => {
  const file = join(mkdtempSync(join(tmpdir(), 'aw-forward-config-')), 'forward.json');
  writeFileSync(
    file,
    JSON.stringify({ destinations: [{ url: 'nats://127.0.0.1:4222/b', name: 'own-b' }] }),
  );
  const receiver = await createTestReceiver({
    ADMIN_PASSWORD: PASSWORD,
    ADMIN_READ_ONLY: 'false',
    FORWARD_URLS: 'nats://127.0.0.1:4222/a',
    FORWARD_CONFIG: file,
  });
  const own = await serve(receiver.listener, 0, '127.0.0.1');
  const origin = `http://127.0.0.1:${own.port}`;
  try {
    // No worker announces them: the inspector knows them from its own settings.
    const fromUrls = receiver.config.forwardDestinations[0]?.name ?? '';
    for (const name of [fromUrls, 'own-b']) {
      await request(origin)
        .post(`/admin/api/destinations/${encodeURIComponent(name)}/pause`)
        .set('Authorization', auth)
        .set('Origin', origin)
        .expect(202);
    }
  } finally {
    await own.close();
    await receiver.close();
  }
  // So docs/configuration.md and .env.example, checked against these, tell operators so.
  expect({
    FORWARD_URLS: SETTINGS.FORWARD_URLS.readBy,
    FORWARD_CONFIG: SETTINGS.FORWARD_CONFIG.readBy,
  }).toEqual({
    FORWARD_URLS: expect.arrayContaining(['web']),
    FORWARD_CONFIG: expect.arrayContaining(['web']),
  });
});

it('read-only (the default): every change refused with 403, reads allowed', async () => {
  const receiver = await createTestReceiver({ ADMIN_PASSWORD: PASSWORD });
  const own = await serve(receiver.listener, 0, '127.0.0.1');
  const origin = `http://127.0.0.1:${own.port}`;
  try {
    await request(origin).get('/admin/api/deliveries').set('Authorization', auth).expect(200);
    const refused = await request(origin)
      .post('/admin/api/destinations/any/pause')
      .set('Authorization', auth)
      .set('Origin', origin)
      .expect(403);
    expect(refused.body).toEqual({ detail: 'the dashboard is read-only (ADMIN_READ_ONLY=true)' });
  } finally {
    await own.close();
    await receiver.close();
  }
});

describe('the stored audio, GET …/<event>/<id>/audio', () => {
  /** The body as bytes, whatever its type. */
  const binary = (res: request.Response, done: (error: Error | null, body: Buffer) => void) => {
    const chunks: Buffer[] = [];
    const stream = res as unknown as NodeJS.ReadableStream;
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => {
      done(null, Buffer.concat(chunks));
    });
  };
  const audioOf = (event: string, id: string) =>
    api(`${detailPath(event, id)}/audio`)
      .buffer(true)
      .parse(binary);

  it('a handled audio.ready: 200, its type and its bytes, behind the same auth', async () => {
    const id = 'inspect-audio/1 ü';
    // Several of the store's chunks long: streamed through, not one buffer.
    const bytes = Buffer.concat([Buffer.from('ID3 '), Buffer.alloc(300_000, 7)]);
    cdn.route('/inspect/audio.mp3', audio(bytes));
    const data = { audio_url: `${cdn.origin}/inspect/audio.mp3` };
    await pipeline.post(sampleDelivery('audio.ready', { id, data })).expect(202);
    const detail = await detailWhen('audio.ready', id, (d) => d.stored !== null, 'stored');
    const res = await audioOf('audio.ready', id);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('audio/mpeg');
    expect(res.headers['content-length']).toBe(String(bytes.length));
    expect(Buffer.compare(res.body as Buffer, bytes)).toBe(0);
    const anonymous = await request(base).get(`/admin/api${detailPath('audio.ready', id)}/audio`);
    expect(anonymous.status).toBe(401);

    // Gone from the store (removed by hand): 404 with a detail, not a 200 cut short.
    unlinkSync(join(pipeline.audioDir, (detail.stored as { key: string }).key));
    const gone = await api(`${detailPath('audio.ready', id)}/audio`);
    expect(gone.status).toBe(404);
    expect(gone.body).toEqual({ detail: expect.stringMatching(/no longer in the store/) });
  });

  it('nothing stored, or no such delivery: 404 with a detail', async () => {
    const id = `inspect-no-audio-${Date.now()}`;
    await pipeline.post(sampleDelivery('key.revoked', { id })).expect(202);
    await detailWhen('key.revoked', id, (d) => steps(d).includes('handled'), 'handled');
    for (const [event, name] of [
      ['key.revoked', id],
      ['audio.ready', 'never-sent'],
    ] as const) {
      const res = await api(`${detailPath(event, name)}/audio`);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ detail: expect.any(String) });
    }
  });
});
