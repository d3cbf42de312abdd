import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';
import { eventually } from '../../src/util/eventually';
import type { RunningServer } from '../../src/http-server/serve';
import { createLogger } from '../../src/telemetry/logger';
import { serveWorkerHealth } from '../../src/worker/health-server';
import { audio, startLocalCdn, type LocalCdn } from '../../harness/local-cdn';
import { freePort, startPrivateRedis, type PrivateRedis } from '../../harness/private-redis';
import { startTestPipeline, type TestPipeline } from '../helpers/test-pipeline';

let cdn: LocalCdn;
let pipeline: TestPipeline | undefined;
let health: RunningServer | undefined;
let redis: PrivateRedis | undefined;

beforeAll(async () => {
  cdn = await startLocalCdn();
});
afterAll(() => cdn.close());
afterEach(async () => {
  await health?.close();
  await pipeline?.close();
  await redis?.stop();
  health = undefined;
  pipeline = undefined;
  redis = undefined;
});

/** The pipeline (receiver and workers as ROLE=all), and its worker's WORKER_HEALTH_PORT server. */
async function start(env: Record<string, string> = {}) {
  const p = await startTestPipeline(
    { CDN_URL: cdn.origin, DOWNLOAD_ALLOW_PRIVATE_IPS: 'true', ...env },
    cdn.ca,
  );
  pipeline = p;
  const logger = createLogger('silent');
  health = await serveWorkerHealth(
    { liveness: p.workers.liveness, registry: p.workers.registry, logger },
    await freePort(),
    '127.0.0.1',
  );
  return p;
}

type Samples = ReadonlyMap<string, number>;

/** Within this a scrape shows what the test waits for, well before jest's 30 s timeout. */
const SOON = { timeoutMs: 10_000 };

/** A series' key with its labels sorted: `name{a="1",b="2"}`. */
function seriesKey(name: string, labels: Record<string, string> = {}): string {
  const pairs = Object.entries(labels)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([label, value]) => `${label}="${value}"`);
  return pairs.length === 0 ? name : `${name}{${pairs.join(',')}}`;
}

/** Prometheus's text format as series → value. */
function parse(text: string): Samples {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    const match = /^([a-z_:]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (match === null) continue;
    const labels: Record<string, string> = {};
    for (const [, label = '', value = ''] of (match[2] ?? '').matchAll(
      /(\w+)="((?:[^"\\]|\\.)*)"/g,
    ))
      labels[label] = value;
    samples.set(seriesKey(match[1] ?? '', labels), Number(match[3]));
  }
  return samples;
}

async function workerMetrics(): Promise<Samples> {
  const response = await fetch(`http://127.0.0.1:${String(health?.port)}/metrics`);
  expect(response.status).toBe(200);
  return parse(await response.text());
}

async function receiverMetrics(p: TestPipeline): Promise<Samples> {
  const response = await request(p.receiver.app).get('/metrics').expect(200);
  return parse(response.text);
}

const at = (samples: Samples, name: string, labels?: Record<string, string>) =>
  samples.get(seriesKey(name, labels));

async function deliver(p: TestPipeline, id: string, path: string) {
  await p
    .post(sampleDelivery('audio.ready', { id, data: { audio_url: `${cdn.origin}${path}` } }))
    .expect(202);
}

it('after a handled audio.ready: its run, its download, its bytes and its write are counted; the disk and Redis are shown', async () => {
  const bytes = randomBytes(123_457);
  cdn.route('/voices/metrics-1.mp3', audio(bytes));
  const p = await start();
  await deliver(p, 'metrics-1', '/voices/metrics-1.mp3');
  expect(await p.settled('metrics-1')).toMatchObject({ state: 'completed' });

  const worker = await workerMetrics();
  const completed = { event: 'audio.ready', outcome: 'completed' };
  expect(at(worker, 'webhook_job_duration_seconds_count', completed)).toBeGreaterThanOrEqual(1);
  expect(at(worker, 'webhook_job_duration_seconds_sum', completed)).toBeGreaterThan(0);
  expect(at(worker, 'webhook_downloads_total', { result: 'stored' })).toBe(1);
  expect(at(worker, 'webhook_downloads_total', { result: 'already_stored' })).toBe(0);
  expect(at(worker, 'webhook_downloads_total', { result: 'transient' })).toBe(0);
  expect(at(worker, 'webhook_downloads_total', { result: 'permanent' })).toBe(0);
  expect(at(worker, 'webhook_download_bytes_total')).toBe(bytes.length);
  expect(at(worker, 'webhook_store_writes_total', { result: 'ok' })).toBe(1);
  expect(at(worker, 'webhook_store_writes_total', { result: 'failed' })).toBe(0);
  expect(at(worker, 'webhook_store_write_duration_seconds_count')).toBe(1);
  const free = at(worker, 'webhook_store_free_bytes') ?? 0;
  expect(free).toBeGreaterThan(0);
  expect(at(worker, 'webhook_store_size_bytes')).toBeGreaterThanOrEqual(free);
  expect(at(worker, 'webhook_queue_oldest_waiting_seconds', { queue: 'deliveries' })).toBe(0);

  for (const samples of [worker, await receiverMetrics(p)]) {
    expect(at(samples, 'webhook_redis_up')).toBe(1);
    expect(at(samples, 'webhook_redis_used_memory_bytes')).toBeGreaterThan(0);
    expect(at(samples, 'webhook_redis_maxmemory_bytes')).toBeGreaterThanOrEqual(0);
  }
});

it('a second run of a stored item counts already_stored and fetches nothing', async () => {
  const bytes = randomBytes(4_000);
  cdn.route('/voices/metrics-2.mp3', audio(bytes));
  const p = await start();
  await deliver(p, 'metrics-2', '/voices/metrics-2.mp3');
  expect(await p.settled('metrics-2')).toMatchObject({ state: 'completed' });
  const { code } = await p.cli('replay', '--id', 'metrics-2');
  expect(code).toBe(0);
  const worker = await eventually(async () => {
    const samples = await workerMetrics();
    return (at(samples, 'webhook_downloads_total', { result: 'already_stored' }) ?? 0) >= 1
      ? samples
      : undefined;
  }, SOON);
  expect(at(worker, 'webhook_downloads_total', { result: 'stored' })).toBe(1);
  expect(at(worker, 'webhook_download_bytes_total')).toBe(bytes.length);
  expect(cdn.hits.get('/voices/metrics-2.mp3')).toBe(1);
});

it('a 404 from the CDN counts a permanent download and a failed run', async () => {
  const p = await start();
  await deliver(p, 'metrics-404', '/voices/nowhere.mp3');
  expect(await p.settled('metrics-404')).toMatchObject({ state: 'failed' });
  const worker = await workerMetrics();
  expect(at(worker, 'webhook_downloads_total', { result: 'permanent' })).toBe(1);
  expect(at(worker, 'webhook_store_writes_total', { result: 'ok' })).toBe(0);
  expect(
    at(worker, 'webhook_job_duration_seconds_count', { event: 'audio.ready', outcome: 'failed' }),
  ).toBe(1);
});

it('the oldest waiting delivery ages while the worker is paused, and is 0 once it ran', async () => {
  cdn.route('/voices/metrics-3.mp3', audio(randomBytes(1_000)));
  const p = await start();
  // Paused for every worker: the job waits in the wait list, ready to run.
  await p.receiver.queue.pause();
  await deliver(p, 'metrics-3', '/voices/metrics-3.mp3');
  const deliveries = { queue: 'deliveries' };
  // Both roles read it: the receiver's /metrics and the worker's.
  const waited = await eventually(async () => {
    const age = at(await receiverMetrics(p), 'webhook_queue_oldest_waiting_seconds', deliveries);
    return age !== undefined && age > 0 ? age : undefined;
  }, SOON);
  expect(waited).toBeLessThan(60);
  const workerAge = at(await workerMetrics(), 'webhook_queue_oldest_waiting_seconds', deliveries);
  expect(workerAge).toBeGreaterThanOrEqual(waited);

  await p.receiver.queue.resume();
  expect(await p.settled('metrics-3')).toMatchObject({ state: 'completed' });
  expect(at(await receiverMetrics(p), 'webhook_queue_oldest_waiting_seconds', deliveries)).toBe(0);
  expect(at(await workerMetrics(), 'webhook_queue_oldest_waiting_seconds', deliveries)).toBe(0);
});

it('a destination that does not answer: its forward ages while delayed for a retry; it is not paused', async () => {
  cdn.route('/voices/metrics-4.mp3', audio(randomBytes(1_000)));
  const closed = await freePort();
  const p = await start({
    FORWARD_URLS: `http://127.0.0.1:${String(closed)}/hook`,
    FORWARD_SECRET: `whsec_${randomBytes(32).toString('base64')}`,
    // The retry waits long enough for the scrape to find the job delayed.
    FORWARD_BACKOFF_MS: '60000',
  });
  const [destination] = p.receiver.config.forwardDestinations;
  const name = destination?.name ?? '';
  expect(name).not.toContain('/hook');
  const fresh = await workerMetrics();
  expect(at(fresh, 'webhook_forward_destination_paused', { destination: name })).toBe(0);
  expect(at(fresh, 'webhook_forward_oldest_waiting_seconds', { destination: name })).toBe(0);

  await deliver(p, 'metrics-4', '/voices/metrics-4.mp3');
  expect(await p.settled('metrics-4')).toMatchObject({ state: 'completed' });
  const samples = await eventually(async () => {
    const scraped = await workerMetrics();
    const age = at(scraped, 'webhook_forward_oldest_waiting_seconds', { destination: name });
    const retrying = at(scraped, 'webhook_forwards_total', {
      destination: name,
      result: 'retrying',
    });
    return age !== undefined && age > 0 && retrying === 1 ? scraped : undefined;
  }, SOON);
  expect(at(samples, 'webhook_forward_destination_paused', { destination: name })).toBe(0);
  // Delayed for its backoff: not ready to run, so not waiting in the queue's sense.
  expect(at(samples, 'webhook_queue_oldest_waiting_seconds', { queue: 'forwards' })).toBe(0);
});

it('webhook_redis_up is 1, and 0 on both roles once their Redis is gone; scrapes still answer', async () => {
  redis = await startPrivateRedis();
  const p = await start({ REDIS_URL: redis.url });
  expect(at(await workerMetrics(), 'webhook_redis_up')).toBe(1);
  expect(at(await receiverMetrics(p), 'webhook_redis_up')).toBe(1);
  const memory = at(await workerMetrics(), 'webhook_redis_used_memory_bytes') ?? 0;
  expect(memory).toBeGreaterThan(0);

  await redis.stop();
  const worker = await eventually(async () => {
    const samples = await workerMetrics();
    return at(samples, 'webhook_redis_up') === 0 ? samples : undefined;
  }, SOON);
  // The last value read, not 0: Redis did not say it uses nothing.
  expect(at(worker, 'webhook_redis_used_memory_bytes')).toBeGreaterThan(0);
  const receiver = await eventually(async () => {
    const samples = await receiverMetrics(p);
    return at(samples, 'webhook_redis_up') === 0 ? samples : undefined;
  }, SOON);
  expect(at(receiver, 'webhook_redis_used_memory_bytes')).toBeGreaterThan(0);

  await redis.start();
  await eventually(
    async () => (at(await workerMetrics(), 'webhook_redis_up') === 1 ? true : undefined),
    SOON,
  );
});
