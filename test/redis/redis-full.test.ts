import { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import request from 'supertest';
import { createLogger } from '../../src/telemetry/logger';
import { startWorkers, type RunningWorkers } from '../../src/worker/start-workers';
import { eventually } from '../../src/util/eventually';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';
import { startPrivateRedis, type PrivateRedis } from '../../harness/private-redis';
import { serviceSettings } from '../helpers/service-settings';
import { spawnService } from '../helpers/spawn-service';
import {
  createTestReceiver,
  signed,
  testConfig,
  type TestReceiver,
} from '../helpers/test-receiver';
import { afterTest } from '../helpers/after-test';

/**
 * What Redis must be for the promises, and what happens when it is not: an eviction policy
 * (refused at start, 503 while running), a Redis that fills (503 before Redis refuses, and
 * accepting again once the workers drained), a Redis that refuses writes (one log line per
 * change, no spin, resumed by itself). Each on a private Redis: these tests reconfigure it.
 */
let server: PrivateRedis;
let admin: Redis;

beforeEach(async () => {
  server = await startPrivateRedis();
  admin = new Redis(server.url);
});
afterEach(async () => {
  admin.disconnect();
  await server.stop();
});

/** A log sink whose lines the test reads. */
function sink() {
  const lines: { level: number; msg: string; reason?: string }[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean))
        lines.push(JSON.parse(line) as { level: number; msg: string });
      done();
    },
  });
  return { lines, logger: createLogger('info', stream) };
}

async function receiverOn(env: Record<string, string> = {}) {
  const log = sink();
  const receiver = await createTestReceiver(
    { REDIS_URL: server.url, ...env },
    { logger: log.logger },
  );
  afterTest(() => receiver.close());
  return { receiver, log };
}

async function memory() {
  const info = await admin.info('memory');
  const field = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1]);
  return { used: field('used_memory'), max: field('maxmemory') };
}

/** used_memory over maxmemory. */
async function usedShare(): Promise<number> {
  const { used, max } = await memory();
  return used / max;
}

/** Commands Redis refused (OOM and the like), over every command. */
async function rejectedCalls(): Promise<number> {
  const stats = await admin.info('commandstats');
  return [...stats.matchAll(/rejected_calls=(\d+)/g)].reduce((sum, [, n]) => sum + Number(n), 0);
}

function post(receiver: TestReceiver, body: unknown) {
  const { raw, headers } = signed(body);
  return request(receiver.listener).post('/webhooks').set(headers).send(raw);
}

describe("Redis's eviction policy", () => {
  it('anything but noeviction refuses the start: exit 1, one line naming it', async () => {
    await admin.config('SET', 'maxmemory-policy', 'volatile-lru');
    const service = spawnService(
      serviceSettings({ REDIS_URL: server.url, PORT: '0', ROLE: 'all' }),
    );
    expect(await service.exited).toBe(1);
    const lines = service.stderr().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/maxmemory-policy is volatile-lru/);
  });

  it('changed while running: /readyz and POST 503 within 10 s, back within 10 s of noeviction', async () => {
    const { receiver, log } = await receiverOn();
    await post(receiver, sampleDelivery('audio.failed')).expect(202);

    await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
    await eventually(
      async () => ((await request(receiver.app).get('/readyz')).status === 503 ? true : undefined),
      { timeoutMs: 10_000 },
    );
    const refused = await post(receiver, sampleDelivery('audio.failed')).expect(503);
    expect(refused.headers['retry-after']).toBeDefined();
    // The provider is told to come back, not how Redis is set up; the log and /metrics say why.
    expect((refused.body as { detail: string }).detail).toBe(
      'could not store the delivery; retry later',
    );
    expect(log.lines.some((l) => /maxmemory-policy is allkeys-lru/.test(l.msg))).toBe(true);
    const metrics = await request(receiver.app).get('/metrics').expect(200);
    expect(metrics.text).toMatch(/webhook_redis_holding\{reason="eviction_policy"\} 1/);

    await admin.config('SET', 'maxmemory-policy', 'noeviction');
    await eventually(
      async () =>
        (await post(receiver, sampleDelivery('audio.failed'))).status === 202 ? true : undefined,
      { timeoutMs: 10_000 },
    );
    await request(receiver.app).get('/readyz').expect(200);
    // One line for the change, one for the return: not one per request.
    const changes = log.lines.filter((l) => /maxmemory-policy|takes writes again/.test(l.msg));
    expect(changes.map((l) => l.level)).toEqual([40, 30]);
  });
});

describe('a Redis that fills', () => {
  it("answers 503 before the workers' mark, and accepts again once the workers drained", async () => {
    // Room for a few hundred 64 KB bodies above what the empty server holds.
    await admin.config('SET', 'maxmemory', String((await memory()).used + 16 * 1024 * 1024));
    const { receiver, log } = await receiverOn();
    const filler = 'x'.repeat(64 * 1024);

    // Posts until the receiver holds deliveries back for the reserve (a 503 for another reason,
    // a store slower than its deadline on a loaded machine, is the provider's to retry too).
    const holding = () => log.lines.some((l) => /kept for the workers/.test(l.msg));
    let accepted = 0;
    for (let i = 0; i < 2000 && !holding(); i += 1) {
      const body = sampleDelivery('audio.failed', { id: `fill-${i}`, data: { filler } });
      if ((await post(receiver, body)).status === 202) accepted += 1;
    }
    expect(holding()).toBe(true);
    expect(accepted).toBeGreaterThan(10);
    const refusal = await post(receiver, sampleDelivery('audio.failed')).expect(503);
    expect(refusal.headers['retry-after']).toBe('5');
    const metrics = await request(receiver.app).get('/metrics').expect(200);
    expect(metrics.text).toMatch(/webhook_redis_holding\{reason="memory_reserve"\} 1/);
    // Redis itself never refused a write: the receiver stopped first, before the mark where
    // the delivery workers slow down (95 %), however fast the posts came.
    expect(await rejectedCalls()).toBe(0);
    expect(await usedShare()).toBeLessThan(0.95);

    // Something else carries Redis past that mark (another writer, records): with no forward
    // waiting, the workers still drain, one job at a time, rather than wait for good.
    for (let i = 0; i < 200 && (await usedShare()) < 0.97; i += 1)
      await admin.set(`ballast:${i}`, 'x'.repeat(16 * 1024));
    expect(await usedShare()).toBeGreaterThan(0.96);

    // One job at a time: what a worker takes before its first reading of Redis cannot free
    // enough to bring it under the mark.
    const workers: RunningWorkers = await startWorkers(
      testConfig({
        REDIS_URL: server.url,
        QUEUE_PREFIX: receiver.config.queuePrefix,
        WORKER_CONCURRENCY: '1',
      }),
      createLogger('silent'),
    );
    afterTest(() => workers.close());
    await eventually(
      async () =>
        (await post(receiver, sampleDelivery('audio.failed'))).status === 202 ? true : undefined,
      { timeoutMs: 25_000, everyMs: 250 },
    );
    const counts = await receiver.queue.getJobCounts('completed', 'failed');
    expect(counts.failed).toBe(0);
    expect(counts.completed).toBeGreaterThan(0);
  }, 60_000);
});

describe('a Redis that refuses writes', () => {
  it('a worker logs one line per change of state, takes no job meanwhile and resumes by itself', async () => {
    const { receiver } = await receiverOn();
    for (let i = 0; i < 5; i += 1)
      await post(receiver, sampleDelivery('audio.failed', { id: `held-${i}` })).expect(202);
    // Past maxmemory, with something the test can free again: a megabyte of ballast, then
    // maxmemory set just below what Redis holds.
    const ballast = Array.from({ length: 16 }, (_, i) => `ballast:${i}`);
    for (const key of ballast) await admin.set(key, 'x'.repeat(64 * 1024));
    const used = Number(/used_memory:(\d+)/.exec(await admin.info('memory'))?.[1]);
    await admin.config('SET', 'maxmemory', String(used - 64 * 1024));

    const log = sink();
    const workers = await startWorkers(
      testConfig({ REDIS_URL: server.url, QUEUE_PREFIX: receiver.config.queuePrefix }),
      log.logger,
    );
    afterTest(() => workers.close());
    // Wait until Redis has refused the worker four times (its probes back off: 1.75 s at least).
    await eventually(async () => ((await rejectedCalls()) >= 4 ? true : undefined), {
      timeoutMs: 20_000,
    });
    const gateLines = () => log.lines.filter((l) => /Redis refuses writes/.test(l.msg));
    expect(gateLines()).toHaveLength(1);
    // Besides it, at most a line per job that was running when Redis refused it (the
    // handler's own warning for each audio.failed it handles is the work, not a complaint).
    const otherLines = () =>
      log.lines
        .filter(
          (l) =>
            l.level >= 40 &&
            !/Redis refuses/.test(l.msg) &&
            l.msg !== 'provider reports a failed audio job',
        )
        .map((l) => l.msg);
    expect(otherLines().slice(5)).toEqual([]);
    expect(await receiver.queue.getJobCounts('completed')).toEqual({ completed: 0 });
    const metrics = await workers.registry.metrics();
    expect(metrics).toMatch(/webhook_redis_holding\{reason="oom"\} 1/);

    await admin.del(...ballast);
    await eventually(async () => {
      const { completed } = await receiver.queue.getJobCounts('completed');
      return completed === 5 ? true : undefined;
    });
    expect(gateLines()).toHaveLength(1);
    expect(otherLines().slice(5)).toEqual([]);
    expect(log.lines.some((l) => l.msg === 'Redis takes writes again')).toBe(true);
  }, 60_000);
});
