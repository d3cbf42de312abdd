import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { shardPrefixes } from '../../src/queue/delivery-keys';
import { checkShardCount, ShardCountError } from '../../src/queue/shard-count';
import { createReceiver, type Receiver } from '../../src/receiver/receiver';
import { createLogger } from '../../src/telemetry/logger';
import { startWorkers } from '../../src/worker/start-workers';
import { eventually } from '../../harness/sandbox-process';
import {
  ask,
  clusterNodes,
  infoField,
  ownerOf,
  startPrivateCluster,
  type PrivateCluster,
} from '../helpers/servers/private-cluster';
import { signed, testConfig } from '../helpers/test-receiver';
import calculateSlot from 'cluster-key-slot';

// QUEUE_SHARDS on a Cluster of three primaries, each with a replica: the deliveries spread over
// every primary, a re-send is a duplicate whichever shard holds it, workers drain every shard,
// and a process started with another count is refused.
let cluster: PrivateCluster;
const receivers: Receiver[] = [];

beforeAll(async () => {
  cluster = await startPrivateCluster({ primaries: 3, replicas: 1 });
}, 90_000);
afterEach(async () => {
  for (const receiver of receivers.splice(0)) await receiver.close();
});
afterAll(async () => {
  await cluster.stop();
});

const post = (receiver: Receiver, body: unknown) => {
  const { raw, headers } = signed(body);
  return request(receiver.listener).post('/webhooks').set(headers).send(raw);
};

/**
 * Posts as the provider does: a 503 (a store past its deadline on a loaded machine) is sent
 * again, up to 20 times. The answer it settles on, and whether it was sent more than once (a
 * timed-out write may have landed: its retry is then rightly answered duplicate).
 */
const settled = async (receiver: Receiver, body: unknown) => {
  for (let attempt = 0; ; attempt++) {
    const answer = await post(receiver, body);
    if (answer.status !== 503 || attempt === 19) return { answer, retried: attempt > 0 };
  }
};

const cpuSeconds = async (port: number) => {
  const info = await ask(port, 'INFO', 'CPU');
  return Number(infoField(info, 'used_cpu_sys')) + Number(infoField(info, 'used_cpu_user'));
};

it('shard n of N hashes into the n-th of N equal slot ranges, the same in every process', () => {
  const prefixes = shardPrefixes('{aw}', 6);
  expect(prefixes).toEqual(shardPrefixes('{aw}', 6));
  prefixes.forEach((prefix, n) => {
    const slot = calculateSlot(`${prefix}:deliveries:wait`);
    expect(slot).toBeGreaterThanOrEqual(Math.floor((n * 16_384) / 6));
    expect(slot).toBeLessThan(Math.floor(((n + 1) * 16_384) / 6));
  });
  expect(shardPrefixes('{aw}', 1)).toEqual(['{aw}']);
});

it('600 deliveries over six shards: every primary holds a fifth of the keys; re-sends are duplicates; workers drain every shard', async () => {
  const prefix = `{aw-${randomUUID().slice(0, 8)}}`;
  const env = { REDIS_CLUSTER_NODES: cluster.seeds, QUEUE_PREFIX: prefix, QUEUE_SHARDS: '6' };
  const [first, second] = [0, 1].map(() => {
    const receiver = createReceiver(testConfig(env), createLogger('silent'));
    receivers.push(receiver);
    return receiver;
  }) as [Receiver, Receiver];
  await eventually(() =>
    Promise.resolve(receivers.every((r) => r.redis.status === 'ready') ? true : undefined),
  );
  const nodes = await clusterNodes(cluster.nodes[0]!.port);
  const primaries = nodes.filter((node) => node.primaryId === undefined);
  expect(primaries).toHaveLength(3);
  const cpuBefore = await Promise.all(primaries.map((node) => cpuSeconds(node.port)));

  const ids = Array.from({ length: 600 }, (_, i) => `spread-${i}`);
  for (let at = 0; at < ids.length; at += 50) {
    const answers = await Promise.all(
      ids.slice(at, at + 50).map((id) => settled(first, { event: 'audio.failed', data: { id } })),
    );
    for (const { answer, retried } of answers) {
      expect(retried ? [202, 200] : [202]).toContain(answer.status);
    }
  }
  const cpuAfter = await Promise.all(primaries.map((node) => cpuSeconds(node.port)));

  // Every key of the queue, by the primary that holds its slot.
  const keys = new Map<string, number>(primaries.map((node) => [node.id, 0]));
  for (const node of primaries) {
    let cursor = '0';
    do {
      const [next, found] = (await ask(
        node.port,
        'SCAN',
        cursor,
        'MATCH',
        `*aw-*`,
        'COUNT',
        1000,
      )) as [string, string[]];
      cursor = next;
      for (const key of found)
        if (key.includes(prefix.slice(1, -1))) {
          const owner = ownerOf(nodes, calculateSlot(key));
          if (owner !== undefined) keys.set(owner.id, (keys.get(owner.id) ?? 0) + 1);
        }
    } while (cursor !== '0');
  }
  const total = [...keys.values()].reduce((sum, n) => sum + n, 0);
  const spent = cpuAfter.map((after, i) => after - (cpuBefore[i] ?? 0));
  const busiest = Math.max(...spent) / spent.reduce((sum, s) => sum + s, 0);
  process.stderr.write(
    `queue-shards: keys per primary ${[...keys.values()].join(', ')} of ${total}; CPU shares ${spent
      .map((s) => ((100 * s) / spent.reduce((a, b) => a + b, 0)).toFixed(1))
      .join(' %, ')} %\n`,
  );
  for (const count of keys.values()) expect(count).toBeGreaterThanOrEqual(total / 5);
  expect(busiest).toBeLessThanOrEqual(0.55);

  // A re-send, through another connection, finds its first copy's mark in its shard.
  const again = await Promise.all(
    ids.slice(0, 120).map((id) => settled(second, { event: 'audio.failed', data: { id } })),
  );
  expect(again.map(({ answer }) => answer.body as unknown)).toEqual(
    again.map(() => ({ received: true, duplicate: true })),
  );

  // One worker process serves every shard: each failure is recorded once.
  const workers = await startWorkers(testConfig(env), createLogger('silent'));
  try {
    const recorded = await eventually(
      async () => {
        const n = await first.redis.zcard(`${prefix}:audio-failures`);
        return n === ids.length ? n : undefined;
      },
      { timeoutMs: 60_000 },
    );
    expect(recorded).toBe(ids.length);
  } finally {
    await workers.close();
  }
}, 180_000);

it('a process started with another QUEUE_SHARDS than the queue was started with is refused, naming both', async () => {
  const prefix = `{aw-${randomUUID().slice(0, 8)}}`;
  const config = (shards: string) =>
    testConfig({ REDIS_CLUSTER_NODES: cluster.seeds, QUEUE_PREFIX: prefix, QUEUE_SHARDS: shards });
  await checkShardCount(config('6'), 5_000);
  await checkShardCount(config('6'), 5_000);
  const refused = checkShardCount(config('3'), 5_000);
  await expect(refused).rejects.toThrow(ShardCountError);
  await expect(refused).rejects.toThrow(/^QUEUE_SHARDS is 3 but .*QUEUE_SHARDS=6\b[^\n]*$/);
});

it('REDIS_WAIT_REPLICAS on a Cluster: a 2xx after a replica of the shard’s primary acknowledged; 503 when none can', async () => {
  const prefix = `{aw-${randomUUID().slice(0, 8)}}`;
  const env = {
    REDIS_CLUSTER_NODES: cluster.seeds,
    QUEUE_PREFIX: prefix,
    QUEUE_SHARDS: '6',
    REDIS_WAIT_REPLICAS: '1',
  };
  const receiver = createReceiver(testConfig(env), createLogger('silent'));
  receivers.push(receiver);
  await eventually(() => Promise.resolve(receiver.redis.status === 'ready' ? true : undefined));
  const ids = Array.from({ length: 60 }, (_, i) => `wait-${i}`);
  const answers = await Promise.all(
    ids.map((id) => settled(receiver, { event: 'audio.failed', data: { id } })),
  );
  for (const { answer, retried } of answers) {
    expect(retried ? [202, 200] : [202]).toContain(answer.status);
  }
  const strict = createReceiver(
    testConfig({ ...env, REDIS_WAIT_REPLICAS: '2', REDIS_WAIT_TIMEOUT_MS: '100' }),
    createLogger('silent'),
  );
  receivers.push(strict);
  await eventually(() => Promise.resolve(strict.redis.status === 'ready' ? true : undefined));
  // Each primary has one replica: two acknowledgements never come.
  await post(strict, { event: 'audio.failed', data: { id: 'wait-strict' } }).expect(503);
});
