import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import calculateSlot from 'cluster-key-slot';
import { Redis } from 'ioredis';
import { runCli } from '../../src/cli/main';
import { checkShardCount, ShardCountError, shardCountKey } from '../../src/queue/shard-count';
import { startPrivateRedis } from '../../harness/private-redis';
import { TEST_SECRET, testConfig } from '../helpers/test-receiver';

// The recorded shard count: the CLI is refused as the service is, a key holding something else is
// refused, and a Redis that cannot answer or refuses writes leaves the check to the running roles.
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
afterAll(async () => {
  await redis.quit();
});

const cli = async (env: Record<string, string>, ...args: string[]) => {
  let stdout = '';
  let stderr = '';
  const code = await runCli(
    args,
    { WEBHOOK_SECRETS: TEST_SECRET, REDIS_URL: process.env.REDIS_URL ?? '', ...env },
    { out: (text) => (stdout += text) },
    { out: (text) => (stderr += text) },
  );
  return { code, stdout, stderr };
};

it('a CLI started with another QUEUE_SHARDS is refused in one line naming both; the same count reads', async () => {
  const prefix = `test-${randomUUID()}`;
  await checkShardCount(testConfig({ QUEUE_PREFIX: prefix, QUEUE_SHARDS: '4' }), 5_000);
  const refused = await cli({ QUEUE_PREFIX: prefix, QUEUE_SHARDS: '2' }, 'failed', '--json');
  expect(refused.code).toBe(2);
  expect(refused.stdout).toBe('');
  expect(refused.stderr).toMatch(
    /^audio-webhooks: QUEUE_SHARDS is 2 but .*QUEUE_SHARDS=4\b[^\n]*\n$/,
  );
  const same = await cli({ QUEUE_PREFIX: prefix, QUEUE_SHARDS: '4' }, 'failed', '--json');
  expect(same).toMatchObject({ code: 0, stdout: '[]\n' });
  // A CLI records nothing: a queue's count is its service's to set.
  const fresh = `test-${randomUUID()}`;
  expect((await cli({ QUEUE_PREFIX: fresh, QUEUE_SHARDS: '3' }, 'failed')).code).toBe(0);
  expect(await redis.get(shardCountKey(fresh))).toBeNull();
  await redis.del(shardCountKey(prefix));
});

it('a key that holds no count is refused in one line naming it, not taken as "not checked"', async () => {
  const prefix = `test-${randomUUID()}`;
  await redis.hset(shardCountKey(prefix), 'not', 'a count');
  const told: string[] = [];
  const checked = checkShardCount(
    testConfig({ QUEUE_PREFIX: prefix, QUEUE_SHARDS: '2' }),
    5_000,
    (reason) => told.push(reason),
  );
  await expect(checked).rejects.toThrow(ShardCountError);
  await expect(checked).rejects.toThrow(
    /^test-[^ ]*:queue-shards in Redis holds no count \(WRONGTYPE[^\n]*$/,
  );
  expect(told).toEqual([]);
  await redis.del(shardCountKey(prefix));
});

it('a full Redis (writes refused) still checks a recorded count, and leaves a queue with none unchecked, saying why', async () => {
  const full = await startPrivateRedis();
  const config = (prefix: string, shards: string) =>
    testConfig({ REDIS_URL: full.url, QUEUE_PREFIX: prefix, QUEUE_SHARDS: shards });
  const admin = new Redis(full.url);
  try {
    await checkShardCount(config('recorded', '4'), 5_000);
    // noeviction at a limit already passed: every write is refused with OOM, reads answer.
    await admin.config('SET', 'maxmemory-policy', 'noeviction');
    await admin.config('SET', 'maxmemory', '1');
    await expect(admin.set('probe', '1')).rejects.toThrow(/^OOM/);
    const told: string[] = [];
    await checkShardCount(config('recorded', '4'), 5_000, (reason) => told.push(reason));
    await expect(checkShardCount(config('recorded', '2'), 5_000)).rejects.toThrow(
      /^QUEUE_SHARDS is 2 but this queue was started with QUEUE_SHARDS=4\b/,
    );
    await checkShardCount(config('none-yet', '4'), 5_000, (reason) => told.push(reason));
    expect(told).toEqual([expect.stringMatching(/^QUEUE_SHARDS not checked .*Redis: OOM /)]);
  } finally {
    admin.disconnect();
    await full.stop();
  }
});

it('an unreachable Redis leaves the count unchecked, and says so', async () => {
  const told: string[] = [];
  await checkShardCount(
    testConfig({ REDIS_URL: 'redis://127.0.0.1:1', QUEUE_SHARDS: '2' }),
    2_000,
    (reason) => told.push(reason),
  );
  expect(told).toEqual([
    expect.stringMatching(/^QUEUE_SHARDS not checked .*Redis: .*ECONNREFUSED/),
  ]);
});

it('queue keys: each shard’s wait list, in its own slot range, then the forwards’', async () => {
  const env = { QUEUE_PREFIX: '{aw}', QUEUE_SHARDS: '3' };
  const printed = await cli(env, 'queue', 'keys', '--json');
  expect(printed.code).toBe(0);
  const rows = JSON.parse(printed.stdout) as { queue: string; shard: number | null; key: string }[];
  expect(rows.map((row) => [row.queue, row.shard])).toEqual([
    ['deliveries', 0],
    ['deliveries', 1],
    ['deliveries', 2],
    ['forwards', null],
  ]);
  rows.slice(0, 3).forEach((row, n) => {
    expect(row.key).toMatch(/^\{aw\.\d+\.\d+\}:deliveries:wait$/);
    expect(calculateSlot(row.key)).toBeGreaterThanOrEqual(Math.floor((n * 16_384) / 3));
    expect(calculateSlot(row.key)).toBeLessThan(Math.floor(((n + 1) * 16_384) / 3));
  });
  expect(rows[3]?.key).toBe('{aw}:forwards:wait');
  const one = await cli({ QUEUE_PREFIX: 'aw' }, 'queue', 'keys');
  expect(one.stdout).toContain('aw:deliveries:wait');
});

it("docs/operations.md's KEDA example names the wait lists `queue keys` prints for its settings", async () => {
  const docs = readFileSync(join(__dirname, '..', '..', 'docs', 'operations.md'), 'utf8');
  const section = docs.slice(docs.indexOf('### KEDA with queue shards'));
  const block = /```yaml\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  const named = [...block.matchAll(/listName: '([^']+)'/g)].map(([, name]) => name);
  const printed = await cli(
    { QUEUE_PREFIX: '{audio-webhooks}', QUEUE_SHARDS: '6' },
    'queue',
    'keys',
    '--json',
  );
  expect(named).toEqual((JSON.parse(printed.stdout) as { key: string }[]).map((row) => row.key));
});
