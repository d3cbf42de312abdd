import { randomBytes, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { eventually } from '../../src/util/eventually';
import { createForwardQueue, forwardJobId } from '../../src/forwarding/forward-queue';
import { createFailureLog } from '../../src/history/failure-log';
import { createRevocationRegistry } from '../../src/history/revocation-registry';
import {
  forwardSecret,
  startHttpEndpoint,
  type HttpEndpoint,
} from '../../harness/forward-destinations';
import { audio, startLocalCdn } from '../../harness/local-cdn';
import { startTestPipeline, type TestPipeline } from '../helpers/test-pipeline';
import { deleteKeys } from '../helpers/test-receiver';
import { timelineKeys } from '../../src/history/delivery-timeline';
import { deliveryKeys } from '../../src/queue/delivery-keys';

/**
 * What a delivery costs in the queue's Redis, which is noeviction: once full, every delivery is
 * refused. Targets (docs/capacity.md): a waiting delivery ≤ body + 2 KB, a pending forward ≤
 * its message + 1 KB, and what a handled delivery leaves (its completed job, its failure-log
 * or revocation row, its forward job, its inspector timeline) ≤ 2 KB in all whatever the body, the provider's numbers
 * kept as written. MEMORY USAGE with SAMPLES 0 counts every byte of a key.
 */
let redis: Redis;
let endpoint: HttpEndpoint;
let pipeline: TestPipeline;
let prefix: string;

beforeAll(async () => {
  redis = new Redis(process.env.REDIS_URL ?? '');
  const secret = forwardSecret();
  endpoint = await startHttpEndpoint(secret);
  endpoint.failing = true;
  pipeline = await startTestPipeline(
    // Room for the 1.5 MB deliveries below.
    { MAX_BODY_BYTES: String(4 * 1024 * 1024) },
    undefined,
    {
      FORWARD_URLS: endpoint.url,
      FORWARD_SECRET: secret,
      // The first attempt fails; the next is far off, so the forward waits to be measured.
      FORWARD_BACKOFF_MS: '600000',
    },
  );
  prefix = pipeline.receiver.config.queuePrefix;
  // The records' keys exist already, as in a running service: a delivery's row is what they
  // grow by, not the cost of creating them.
  const data = { id: 'earlier', note: 'a record of more than 64 bytes, as every record is' };
  await createFailureLog(redis, prefix).record({ event: 'audio.failed', data }, iso());
  await createRevocationRegistry(redis, prefix).record({ event: 'key.revoked', data }, iso());
});

afterAll(async () => {
  await pipeline.close();
  await endpoint.close();
  await deleteKeys(redis, `${prefix}:*`);
  redis.disconnect();
});

const iso = () => new Date().toISOString();

/** A delivery of about `bytes` bytes whose data holds numbers written short. */
function bodyOf(event: string, id: string, bytes: number): string {
  const head = `{"event":"${event}","data":{"id":"${id}","values":[`;
  const count = Math.max(1, Math.floor((bytes - head.length - 3) / 5));
  return `${head}${Array.from({ length: count }, () => '1e20').join(',')}]}}`;
}

async function memory(key: string): Promise<number> {
  return Number(await redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
}

/**
 * The bytes a job's hash holds: every field's name and value, without the allocator's rounding
 * that MEMORY USAGE adds (jemalloc gives a string of 1 MiB + 1 byte a 1.25 MiB block).
 */
async function stored(key: string): Promise<number> {
  const fields = await redis.hkeys(key);
  const lengths = await Promise.all(fields.map((field) => redis.hstrlen(key, field)));
  return fields.reduce((sum, field, i) => sum + Buffer.byteLength(field) + (lengths[i] ?? 0), 0);
}

/** The records' rows as they are now: each hash's fields, the failure log's index members. */
async function rowsNow(): Promise<Set<string>[]> {
  return [
    new Set(await redis.hkeys(`${prefix}:audio-failures:records`)),
    new Set(await redis.hkeys(`${prefix}:revoked-keys`)),
    new Set(await redis.zrevrange(`${prefix}:audio-failures`, 0, -1)),
  ];
}

/**
 * Waits until the delivery's forward job, if one was queued, is sent: what is measured is what
 * stays once everything is done. A first attempt made at once that takes longer than its bound
 * (a loaded machine) leaves a forward job holding the message until its next attempt, which
 * FORWARD_BACKOFF_MS puts far off: it is brought forward here.
 */
async function forwardSent(jobId: string): Promise<void> {
  const forwards = createForwardQueue(redis, prefix);
  try {
    await eventually(async () => {
      const state = await forwards.getJobState(forwardJobId(jobId));
      if (state === 'completed' || state === 'unknown') return true;
      // It may leave `delayed` between the two reads: promote then refuses, and the next look sees it.
      if (state === 'delayed')
        await (await forwards.getJob(forwardJobId(jobId)))?.promote().catch(() => undefined);
      return undefined;
    });
  } finally {
    await forwards.close();
  }
}

/**
 * What Redis keeps of a handled delivery: MEMORY USAGE of the keys it created (its job, its
 * forward job if one is left), and the bytes of the rows it added to the records' keys (field
 * and value; index member and its 8-byte score). A row is counted by its bytes: MEMORY USAGE of
 * a key many deliveries share grows by steps (an allocation of the next size) at one of them.
 */
async function keptBy(
  jobId: string,
  rowsBefore: readonly Set<string>[],
  about: { readonly event: string; readonly id: string },
): Promise<number> {
  await forwardSent(jobId);
  const job = await memory(`${prefix}:deliveries:${jobId}`);
  // Its timeline for the inspector: its record, and its member in the time index (by bytes, as
  // the rows below) and in the failed one, which a handled delivery has left.
  const keys = timelineKeys(deliveryKeys(prefix).placeOf(about.event, about.id));
  const timeline =
    (await memory(keys.timeline)) +
    ((await redis.zscore(keys.all, keys.member)) === null ? 0 : keys.member.length + 8) +
    ((await redis.zscore(keys.failed, keys.member)) === null ? 0 : keys.member.length + 8);
  expect(timeline).toBeGreaterThan(0);
  const forward = await memory(`${prefix}:forwards:${forwardJobId(jobId)}`);
  const [failures, revocations, index] = await rowsNow();
  const added = (now: Set<string> | undefined, i: number) =>
    [...(now ?? [])].filter((key) => !(rowsBefore[i]?.has(key) ?? false));
  let records = 0;
  for (const [hash, fields] of [
    [`${prefix}:audio-failures:records`, added(failures, 0)],
    [`${prefix}:revoked-keys`, added(revocations, 1)],
  ] as const) {
    for (const field of fields) {
      records += Buffer.byteLength(field) + (await redis.hstrlen(hash, field));
    }
  }
  for (const member of added(index, 2)) records += Buffer.byteLength(member) + 8;
  return job + forward + records + timeline;
}

/** Posts `body` with the queue paused: the job's id, and its bytes while it waits. */
async function post(body: string): Promise<{ jobId: string; waiting: number }> {
  const { queue } = pipeline.receiver;
  // Paused for every worker, so the job is still waiting when it is measured.
  await queue.pause();
  const answer = await pipeline.post(body).expect(202);
  expect(answer.body).toEqual({ received: true, duplicate: false });
  const [job] = await queue.getWaiting(0, 0);
  const jobId = String(job?.id);
  const waiting = await stored(`${prefix}:deliveries:${jobId}`);
  await queue.resume();
  return { jobId, waiting };
}

it.each([
  ['230 B', 230],
  ['300 B', 300],
  ['400 B', 400],
  ['512 B', 512],
  ['1 KB', 1024],
  ['1 MB', 1_048_428],
])(
  '%s body, forwarded: waiting ≤ body + 2 KB, pending forward ≤ message + 1 KB, then ≤ 2 KB left in all',
  async (_label, size) => {
    endpoint.failing = true;
    // As long as an id a record keeps whole: the largest row.
    const id = `footprint-${randomUUID()}`.padEnd(64, '-');
    const body = bodyOf('audio.failed', id, size);
    const rowsBefore = await rowsNow();
    const { jobId, waiting } = await post(body);
    expect(waiting).toBeLessThanOrEqual(body.length + 2048);
    expect(await pipeline.settled(id)).toMatchObject({ state: 'completed' });

    const forwards = createForwardQueue(redis, prefix);
    try {
      // Its first attempt failed (the endpoint answers 503): it waits for the next.
      const forward = await eventually(async () => {
        const found = await forwards.getJob(forwardJobId(jobId));
        return (await found?.getState()) === 'delayed' ? found : undefined;
      });
      const message = forward.data.body;
      // The provider's text, not a copy re-serialised: 1e20 is still 1e20.
      expect(message).toContain('[1e20,1e20');
      expect(message.length).toBeLessThanOrEqual(body.length + 300);
      const pending = await stored(`${prefix}:forwards:${forwardJobId(jobId)}`);
      expect(pending).toBeLessThanOrEqual(Buffer.byteLength(message) + 1024);

      // Sent at last: what the delivery leaves behind is its record and its job's.
      endpoint.failing = false;
      const received = endpoint.inbox.messages.length;
      await forward.promote();
      await endpoint.inbox.atLeast(received + 1);
      await eventually(async () =>
        ['completed', 'unknown'].includes(await forwards.getJobState(forwardJobId(jobId)))
          ? true
          : undefined,
      );
      const kept = await keptBy(jobId, rowsBefore, { event: 'audio.failed', id });
      expect(kept).toBeLessThanOrEqual(2048);
    } finally {
      await forwards.close();
    }
  },
);

describe('what a handled delivery leaves: at most 2 KB in all, whatever the body', () => {
  beforeAll(() => {
    // Every forward is taken at once: no forward job.
    endpoint.failing = false;
  });

  it('an audio.failed of 1.5 MB: its row says how long its data was, and keeps none of it', async () => {
    const id = `footprint-${randomUUID()}`;
    const body = bodyOf('audio.failed', id, 1_500_000);
    const data = body.slice(body.indexOf('{"id"'), -1);
    const rowsBefore = await rowsNow();
    const { jobId } = await post(body);
    expect(await pipeline.settled(id)).toMatchObject({ state: 'completed' });
    const kept = await keptBy(jobId, rowsBefore, { event: 'audio.failed', id });
    expect(kept).toBeLessThanOrEqual(2048);

    const rows = JSON.parse((await pipeline.cli('failures', '--json')).stdout) as unknown[];
    expect(rows[0]).toEqual({
      kind: 'audio.failed',
      id,
      event: 'audio.failed',
      data_id: id,
      at: expect.any(String),
      received_at: expect.any(String),
      payload: null,
      payload_bytes: Buffer.byteLength(data),
      payload_truncated: true,
    });
    const table = (await pipeline.cli('failures')).stdout;
    expect(table).toContain(`${id}  `);
    expect(table).toContain(`(${Buffer.byteLength(data)} bytes, not kept)`);
  });

  it('an audio.failed of a few numbers: its row keeps its data as the provider wrote it', async () => {
    const id = `footprint-${randomUUID()}`;
    const data = `{"id":"${id}", "error":"voice unavailable","values":[1e20,1E+20,0.10]}`;
    const rowsBefore = await rowsNow();
    const { jobId } = await post(`{"event":"audio.failed","data":${data}}`);
    expect(await pipeline.settled(id)).toMatchObject({ state: 'completed' });
    const kept = await keptBy(jobId, rowsBefore, { event: 'audio.failed', id });
    expect(kept).toBeLessThanOrEqual(2048);

    const record = await redis.hget(`${prefix}:audio-failures:records`, id);
    // 1e20 stays 4 bytes, not 21 digits; the text is the provider's, spaces and all.
    expect(record).toContain(`"payload":${data}`);
    expect(record).not.toContain('100000000000000000000');
  });

  it('a key.revoked with a 1 MB id and 1.5 MB in all: a row of a few hundred bytes, still found by isKeyRevoked', async () => {
    const id = `key_${randomUUID()}_${'k'.repeat(1_000_000)}`;
    const body = bodyOf('key.revoked', id, 1_500_000);
    const rowsBefore = await rowsNow();
    const { jobId } = await post(body);
    expect(await pipeline.settled(id.slice(0, 200))).toMatchObject({ state: 'completed' });
    const kept = await keptBy(jobId, rowsBefore, { event: 'key.revoked', id });
    expect(kept).toBeLessThanOrEqual(2048);

    const registry = createRevocationRegistry(redis, prefix);
    expect(await registry.isKeyRevoked(id)).toBe(true);
    expect(await registry.isKeyRevoked(`${id}x`)).toBe(false);
    expect(await registry.isKeyRevoked(id.slice(0, 64))).toBe(false);
    const rows = JSON.parse((await pipeline.cli('revoked-keys', '--json')).stdout) as unknown[];
    expect(rows).toContainEqual({
      id: id.slice(0, 64),
      id_truncated: true,
      revoked_at: expect.any(String),
      payload: null,
      payload_bytes: body.length - '{"event":"key.revoked","data":}'.length,
      payload_truncated: true,
    });
    expect((await pipeline.cli('revoked-keys')).stdout).toContain(`${id.slice(0, 64)}…  `);
  });
});

it('an audio.ready whose id and URL are long: its completed job keeps what it stored, not its metadata', async () => {
  const cdn = await startLocalCdn();
  const ready = await startTestPipeline(
    { CDN_URL: cdn.origin, DOWNLOAD_ALLOW_PRIVATE_IPS: 'true' },
    cdn.ca,
  );
  try {
    const id = `ready-${randomUUID()}`.padEnd(200, '-');
    const path = `/${randomUUID()}.mp3`;
    const bytes = randomBytes(1000);
    cdn.route(path, audio(bytes));
    // The metadata holds the id, the URL and where it led: each as long as the body allows.
    const url = `${cdn.origin}${path}?${'q'.repeat(10_000)}`;
    const body = JSON.stringify({
      event: 'audio.ready',
      data: { id, kind: 'tts', voice: 'nova', created_at: iso(), audio_url: url },
    });
    await ready.post(body).expect(202);
    const outcome = await ready.settled(id);
    expect(outcome).toEqual({
      state: 'completed',
      result: { file: expect.any(String), bytes: 1000, sha256: expect.any(String) },
    });
    const [job] = await ready.receiver.queue.getCompleted(0, 0);
    const left = await memory(`${ready.receiver.config.queuePrefix}:deliveries:${String(job?.id)}`);
    expect(left).toBeLessThanOrEqual(2048);
  } finally {
    await ready.close();
    await cdn.close();
  }
});
