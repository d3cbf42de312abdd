import { Redis } from 'ioredis';
import { createDeliveryQueue } from '../src/queue/delivery-queue.js';
import { deliveryKeys } from '../src/queue/delivery-keys.js';
import {
  defineTimelineCommands,
  deliveryTimeline,
  timelineKeys,
  type StoredTimeline,
} from '../src/history/delivery-timeline.js';
import { createInspector } from '../src/inspector/inspector.js';
import { loadConfig } from '../src/settings.js';
import { startPrivateRedis } from '../harness/private-redis.js';

/**
 * Finding one delivery among many (the delivery inspector): 1,000,000 deliveries' timeline
 * records in a private Redis, in the layout the service writes, then the p95 of a search by id,
 * the newest 50 failed, and one delivery's detail, through the inspector's own code; and what
 * the records cost Redis per delivery.
 *
 * The records are the service's own: two deliveries (one handled and forwarded, one failed after
 * two attempts) are written through the service's scripts, exactly as the receiver, the worker
 * and forwarding write them; the million are copies of those two with their own id and time (a
 * twentieth failed), spread over the 7 days of ARCHIVE_RETENTION_HOURS, written pipelined.
 */
export interface InspectorResult {
  readonly deliveries: number;
  readonly failed: number;
  readonly loadSeconds: number;
  readonly p95Ms: { readonly byId: number; readonly failed50: number; readonly detail: number };
  /** used_memory's growth over the load, per delivery: records, indexes, Redis's own overhead. */
  readonly bytesPerDelivery: number;
  /** MEMORY USAGE of one handled delivery's record. */
  readonly recordBytes: number;
}

const DELIVERIES = Number(process.env.BENCH_INSPECTOR_DELIVERIES ?? 1_000_000);
const FAILED_EVERY = 20;
const SAMPLES = 500;
const PIPELINE = 5_000;
const WEEK_MS = 7 * 24 * 3600 * 1000;
const PREFIX = 'bench-inspector';
const KEYS = deliveryKeys(PREFIX);

/** The two model records, written by the service's scripts. */
async function models(redis: Redis, now: number): Promise<[StoredTimeline, StoredTimeline]> {
  const timeline = deliveryTimeline(redis, KEYS.placeOf, WEEK_MS);
  defineTimelineCommands(redis);
  const write = async (id: string, failed: boolean) => {
    const subject = { event: 'audio.ready', id, receivedAt: now };
    const keys = timelineKeys(KEYS.placeOf('audio.ready', id));
    const multi = redis.multi();
    const mark = `${PREFIX}:seen:model-${id}`;
    multi.set(mark, 'job-1');
    timeline.received(
      multi,
      { ...KEYS.placeOf('audio.ready', id), mark },
      'job-1',
      subject,
      '1 512',
    );
    await multi.exec();
    await timeline.write(subject, {
      code: 'A',
      detail: '1 worker-7f9c:4711',
      state: 'a',
      attempts: 1,
    });
    if (failed) {
      const reason = 'the CDN answered 503 Service Unavailable';
      await timeline.write(subject, { code: 'X', detail: reason });
      await timeline.write(subject, {
        code: 'A',
        detail: '2 worker-7f9c:4711',
        state: 'a',
        attempts: 2,
      });
      await timeline.write(subject, { code: 'X', detail: reason });
      await timeline.write(subject, { code: 'F', detail: reason, state: 'f', failedIndex: '+' });
    } else {
      const stored = {
        key: `${id}.mp3`,
        bytes: 48213,
        sha256: 'e'.repeat(64),
        content_type: 'audio/mpeg',
      };
      await timeline.write(subject, { code: 'S', detail: JSON.stringify(stored) });
      const destination = { name: 'indexer', code: 's' as const, attempts: 1 };
      await timeline.write(subject, { code: 'W', destination });
      await timeline.write(subject, { code: 'H', state: 'h', failedIndex: '-' });
    }
    const record = JSON.parse((await redis.get(keys.timeline)) ?? 'null') as StoredTimeline;
    await redis.del(keys.timeline, keys.all, keys.failed, `${PREFIX}:seen:model-${id}`);
    return record;
  };
  return [
    await write('model-handled-00000000', false),
    await write('model-failed-000000000', true),
  ];
}

/** The id of the n-th delivery: as long as the provider's (a UUID-like 36 characters). */
const idOf = (n: number) => `item-${String(n).padStart(31, '0')}`;

async function load(redis: Redis, now: number): Promise<number> {
  const [handled, failed] = await models(redis, now);
  const started = performance.now();
  for (let start = 0; start < DELIVERIES; start += PIPELINE) {
    const batch = redis.pipeline();
    for (let n = start; n < Math.min(DELIVERIES, start + PIPELINE); n++) {
      const id = idOf(n);
      const isFailed = n % FAILED_EVERY === 0;
      // Oldest first, spread over the week: the newest is the last written.
      const received = now - WEEK_MS + Math.floor((n / DELIVERIES) * WEEK_MS);
      const model = isFailed ? failed : handled;
      const record = [model[0], id, received, ...model.slice(3)];
      const keys = timelineKeys(KEYS.placeOf('audio.ready', id));
      // The scripts' output, byte for byte: cjson writes what JSON.stringify does for these.
      const text = JSON.stringify(record).replaceAll(JSON.stringify(model[1]).slice(1, -1), id);
      batch.set(keys.timeline, text, 'PX', received + WEEK_MS - now + 60_000);
      batch.zadd(keys.all, received, keys.member);
      if (isFailed) batch.zadd(keys.failed, received, keys.member);
    }
    await batch.exec();
  }
  return (performance.now() - started) / 1000;
}

function p95(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return Math.round((sorted[Math.floor(sorted.length * 0.95)] ?? 0) * 100) / 100;
}

async function timed(times: number, run: (i: number) => Promise<unknown>): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < times; i++) {
    const start = performance.now();
    await run(i);
    samples.push(performance.now() - start);
  }
  return p95(samples);
}

const usedMemory = async (redis: Redis) =>
  Number(/^used_memory:(\d+)/m.exec(await redis.info('memory'))?.[1]);

export async function runInspector(): Promise<InspectorResult> {
  const server = await startPrivateRedis();
  const redis = new Redis(server.url);
  const queue = createDeliveryQueue({ connection: redis, prefix: PREFIX });
  try {
    const now = Date.now();
    const before = await usedMemory(redis);
    process.stderr.write(`inspector: loading ${DELIVERIES} deliveries' timelines\n`);
    const loadSeconds = await load(redis, now);
    const bytesPerDelivery = Math.round(((await usedMemory(redis)) - before) / DELIVERIES);
    const sample = timelineKeys(KEYS.placeOf('audio.ready', idOf(1))).timeline;
    const recordBytes = Number(await redis.call('MEMORY', 'USAGE', sample, 'SAMPLES', '0'));
    const config = loadConfig({ WEBHOOK_SECRETS: 'whsec_bench', QUEUE_PREFIX: PREFIX });
    const inspector = createInspector({
      redis,
      prefix: PREFIX,
      queues: [queue],
      timeline: deliveryTimeline(redis, KEYS.placeOf, WEEK_MS),
      dedupeTtlSeconds: config.dedupeTtlSeconds,
      events: ['audio.ready', 'audio.failed', 'key.revoked'],
      archive: () => Promise.resolve(undefined),
      forwarding: config,
    });
    const random = () => idOf(Math.floor(Math.random() * DELIVERIES));
    const byId = await timed(SAMPLES, async () => {
      const found = await inspector.search({ id: random(), limit: 50 });
      if (found.timelines.length !== 1) throw new Error('bench: an id searched for was not found');
    });
    const failed50 = await timed(SAMPLES, async () => {
      const found = await inspector.search({ state: 'failed', limit: 50 });
      if (found.timelines.length !== 50) throw new Error('bench: fewer than 50 failed listed');
    });
    const detail = await timed(SAMPLES, async () => {
      if ((await inspector.detail('audio.ready', random())) === undefined)
        throw new Error('bench: a delivery looked up was not found');
    });
    return {
      deliveries: DELIVERIES,
      failed: Math.ceil(DELIVERIES / FAILED_EVERY),
      loadSeconds: Math.round(loadSeconds * 10) / 10,
      p95Ms: { byId, failed50, detail },
      bytesPerDelivery,
      recordBytes,
    };
  } finally {
    await queue.close();
    redis.disconnect();
    await server.stop();
  }
}

/** The four targets. */
export function inspectorTargets(r: InspectorResult): [string, boolean, string][] {
  const n = r.deliveries.toLocaleString('en');
  return [
    [
      `inspector, ${n} deliveries kept: search by id p95 ≤ 50 ms`,
      r.p95Ms.byId <= 50,
      `${r.p95Ms.byId} ms`,
    ],
    [
      `inspector: the newest 50 failed p95 ≤ 250 ms`,
      r.p95Ms.failed50 <= 250,
      `${r.p95Ms.failed50} ms`,
    ],
    [
      `inspector: one delivery's detail p95 ≤ 100 ms`,
      r.p95Ms.detail <= 100,
      `${r.p95Ms.detail} ms`,
    ],
    [
      'inspector: Redis per handled delivery (its record and index entries) ≤ 2 KB',
      r.bytesPerDelivery <= 2048,
      `${r.bytesPerDelivery} B (a record's MEMORY USAGE ${r.recordBytes} B; ${n} loaded in ${r.loadSeconds} s)`,
    ],
  ];
}
