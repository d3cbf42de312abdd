import { Redis } from 'ioredis';
import { createDeliveryQueue, type DeliveryQueue } from '../../src/queue/delivery-queue';
import { deliveryJobData } from '../../src/queue/delivery-job-data';
import { startPrivateRedis, type PrivateRedis } from '../../harness/private-redis';

/**
 * The adds asked for in one turn share one MULTI, and each still stands alone: its own
 * commands applied with its add or not at all, its own replies, its own error. A Redis of the
 * test's own, so the transactions counted are these alone.
 */
let server: PrivateRedis;
let redis: Redis;
let queue: DeliveryQueue;

beforeAll(async () => {
  server = await startPrivateRedis();
  redis = new Redis(server.url);
  queue = createDeliveryQueue({ connection: redis, prefix: 'batch' });
  await queue.waitUntilReady();
});

afterAll(async () => {
  await queue.close();
  redis.disconnect();
  await server.stop();
});

/** How many MULTIs the server has run so far. */
async function multis(): Promise<number> {
  const stats = await redis.info('commandstats');
  return Number(/cmdstat_multi:calls=(\d+)/.exec(stats)?.[1] ?? 0);
}

/** An add whose `before` sets the hash `key`; the job's id is `key` too. */
function add(key: string, opts: { priority?: number } = {}) {
  return queue.addAfter(
    'audio.failed',
    deliveryJobData('{}', new Date()),
    { jobId: key, ...opts },
    (t) => {
      t.hset(key, { by: 'before' });
    },
  );
}

it('twenty adds in one turn run in one MULTI, each answered with its own id and replies', async () => {
  const before = await multis();
  const keys = Array.from({ length: 20 }, (_, i) => `one-turn-${String(i)}`);
  const added = await Promise.all(keys.map((key) => add(key)));
  expect(added).toEqual(keys.map((key) => ({ id: key, replies: [1] })));
  expect((await multis()) - before).toBe(1);
  for (const key of keys) expect(await redis.hget(key, 'by')).toBe('before');
});

it('an add BullMQ refuses while it is queued is rejected alone, and its own commands do not run', async () => {
  const results = await Promise.allSettled([
    add('beside-refused-1'),
    // BullMQ's own check: a priority above 2,097,152 throws while the job is queued.
    add('refused', { priority: 3_000_000 }),
    add('beside-refused-2'),
  ]);
  expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
  expect(String((results[1] as PromiseRejectedResult).reason)).toMatch(/priority/i);
  expect(await redis.exists('refused', 'batch:deliveries:refused')).toBe(0);
  expect(await redis.exists('beside-refused-1', 'beside-refused-2')).toBe(2);
});

it('a command that fails in one add rejects that caller alone; the others get their answers', async () => {
  await redis.set('not-a-hash', 'x');
  const failing = queue.addAfter(
    'audio.failed',
    deliveryJobData('{}', new Date()),
    { jobId: 'with-failing-command' },
    (t) => {
      t.hset('not-a-hash', { by: 'before' });
    },
  );
  const results = await Promise.allSettled([
    add('beside-failing-1'),
    failing,
    add('beside-failing-2'),
  ]);
  expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
  expect(String((results[1] as PromiseRejectedResult).reason)).toMatch(/WRONGTYPE/);
});

it('a MULTI Redis refuses as a whole rejects every add of it, and applies none', async () => {
  await redis.config('SET', 'maxmemory', '1');
  try {
    const results = await Promise.allSettled([add('refused-whole-1'), add('refused-whole-2')]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(String((results[0] as PromiseRejectedResult).reason)).toMatch(/OOM|EXECABORT/);
  } finally {
    await redis.config('SET', 'maxmemory', '0');
  }
  expect(await redis.exists('refused-whole-1', 'refused-whole-2')).toBe(0);
});

// The Cluster soak (docs/reliability.md, "Soak on a Redis Cluster") saw two deliveries answered
// 200 duplicate, and never stored, by a receiver whose MULTI's EXEC answered no array: the
// adds were read as BullMQ deduplicating to a job whose id was `undefined`. An EXEC that
// answers nil applied nothing, as a WATCHed key touched makes it here.
it.each([
  ['without WAIT', undefined],
  ['with WAIT', { replicas: 1, timeoutMs: 50 }],
])(
  'an EXEC that answers nil (nothing applied) rejects every add of it, %s; none reads as a duplicate',
  async (_name, wait) => {
    const other = new Redis(server.url);
    const saved = queue.replicaWait;
    queue.replicaWait = wait;
    try {
      await redis.watch('watched');
      await other.set('watched', 'touched');
      const results = await Promise.allSettled([add('nil-exec-1'), add('nil-exec-2')]);
      expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
      expect(String((results[0] as PromiseRejectedResult).reason)).toMatch(/applied none/);
    } finally {
      queue.replicaWait = saved;
      other.disconnect();
    }
    expect(await redis.exists('nil-exec-1', 'batch:deliveries:nil-exec-1')).toBe(0);
  },
);
