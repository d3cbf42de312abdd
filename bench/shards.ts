/**
 * The sharded queue (QUEUE_SHARDS on a Redis Cluster): a receiver with QUEUE_SHARDS=6 on a private
 * Cluster of three primaries, each with a replica, takes a fixed number of deliveries; each
 * primary's share of the Redis CPU they cost (INFO cpu before and after, on each primary) shows
 * how evenly the shards spread. The same run against one Redis with one replica gives the
 * deliveries per second one primary takes, and the Redis CPU a delivery costs there. On two
 * cores the Cluster's gain in throughput does not show (the receiver and three primaries share
 * them), but the spread does.
 */
import { randomUUID } from 'node:crypto';
import { ask, infoField, startPrivateCluster, waitFor } from '../harness/private-cluster.js';
import { freePort, startPrivateRedis, type PrivateRedis } from '../harness/private-redis.js';
import { postDeliveries, spawnService, stop } from './lib.js';
import type { Section } from './section.js';

const DELIVERIES = 10_000;
const SHARDS = 6;
/** The busiest primary's share of the Cluster's Redis CPU may be at most this. */
const BUSIEST_PERCENT = 55;

interface Run {
  readonly deliveries: number;
  readonly seconds: number;
  readonly perSecond: number;
  readonly non2xx: number;
  /** Each primary's Redis CPU seconds (user + system) over the run. */
  readonly primaryCpuSeconds: readonly number[];
  /** Redis CPU per delivery, all primaries together, ms. */
  readonly redisCpuMsPerDelivery: number;
}

const cpuSeconds = async (port: number) => {
  const info = await ask(port, 'INFO', 'cpu');
  return Number(infoField(info, 'used_cpu_sys')) + Number(infoField(info, 'used_cpu_user'));
};

/** A receiver on `redis` (settings), `DELIVERIES` posted, the primaries' CPU read around them. */
async function post(
  redis: Record<string, string>,
  primaries: readonly number[],
  cdnOrigin: string,
): Promise<Run> {
  const port = await freePort();
  const receiver = await spawnService({
    ...redis,
    ROLE: 'web',
    PORT: String(port),
    QUEUE_PREFIX: `{bench-shards-${randomUUID().slice(0, 8)}}`,
    QUEUE_SHARDS: String(SHARDS),
    LOG_LEVEL: 'info',
  });
  try {
    const ids = Array.from({ length: DELIVERIES }, () => randomUUID());
    await postDeliveries(port, ids.slice(0, 500), cdnOrigin);
    const before = await Promise.all(primaries.map(cpuSeconds));
    const started = performance.now();
    const non2xx = await postDeliveries(port, ids.slice(500), cdnOrigin);
    const seconds = (performance.now() - started) / 1000;
    const after = await Promise.all(primaries.map(cpuSeconds));
    const spent = after.map((a, i) => a - (before[i] ?? 0));
    const counted = DELIVERIES - 500;
    return {
      deliveries: counted,
      seconds: Math.round(seconds * 100) / 100,
      perSecond: Math.round(counted / seconds),
      non2xx,
      primaryCpuSeconds: spent.map((s) => Math.round(s * 1000) / 1000),
      redisCpuMsPerDelivery:
        Math.round((spent.reduce((sum, s) => sum + s, 0) / counted) * 1e6) / 1000,
    };
  } finally {
    await stop(receiver);
  }
}

/** One Redis with one replica, as each of the Cluster's primaries has. */
async function onOneRedis(cdnOrigin: string): Promise<Run> {
  const started: PrivateRedis[] = [];
  try {
    const primary = await startPrivateRedis();
    started.push(primary);
    started.push(
      await startPrivateRedis({ args: ['--replicaof', '127.0.0.1', String(primary.port)] }),
    );
    await waitFor('the replica linked to its primary and synced', async () => {
      const info = await ask(started[1]?.port ?? 0, 'INFO', 'replication');
      return infoField(info, 'master_link_status') === 'up' ? true : undefined;
    });
    return await post({ REDIS_URL: primary.url }, [primary.port], cdnOrigin);
  } finally {
    for (const server of started) await server.stop();
  }
}

async function onCluster(cdnOrigin: string): Promise<Run> {
  const cluster = await startPrivateCluster({ primaries: 3, replicas: 1 });
  try {
    const roles = await Promise.all(
      cluster.nodes.map(async (node) =>
        infoField(await ask(node.port, 'INFO', 'replication'), 'role'),
      ),
    );
    const primaries = cluster.nodes.filter((_, i) => roles[i] === 'master').map((n) => n.port);
    return await post({ REDIS_CLUSTER_NODES: cluster.seeds }, primaries, cdnOrigin);
  } finally {
    await cluster.stop();
  }
}

export async function runShardsSection(cdnOrigin: string): Promise<Section<unknown>> {
  process.stderr.write(`shards: ${DELIVERIES} deliveries, QUEUE_SHARDS=${SHARDS}, one Redis\n`);
  const one = await onOneRedis(cdnOrigin);
  process.stderr.write('shards: the same on a Cluster of three primaries\n');
  const cluster = await onCluster(cdnOrigin);
  const total = cluster.primaryCpuSeconds.reduce((sum, s) => sum + s, 0);
  const shares = cluster.primaryCpuSeconds.map((s) => s / total);
  const busiest = Math.max(...shares);
  const percent = (share: number) => `${(share * 100).toFixed(1)} %`;
  // What one primary's core carries at 100 %: the receiver's side of a delivery alone.
  const perPrimaryCore = (run: Run) => Math.round(1000 / run.redisCpuMsPerDelivery);
  return {
    title: `The sharded queue (QUEUE_SHARDS=${SHARDS}, ${one.deliveries} deliveries timed)`,
    figures: { one, cluster, shares, perPrimaryCore: perPrimaryCore(one) },
    lines: [
      `One Redis (one replica): ${one.perSecond} deliveries/s answered (${one.seconds} s, ${one.non2xx} non-2xx); Redis CPU ${one.redisCpuMsPerDelivery} ms per delivery, so one primary's core carries about ${perPrimaryCore(one)} deliveries/s of the receiver's side at 100 %.`,
      '',
      `A Cluster of three primaries (one replica each): ${cluster.perSecond} deliveries/s answered (${cluster.seconds} s, ${cluster.non2xx} non-2xx); Redis CPU ${cluster.redisCpuMsPerDelivery} ms per delivery, all primaries together; each primary's share: ${shares.map(percent).join(', ')} (${cluster.primaryCpuSeconds.join(', ')} s).`,
    ],
    targets: [
      [
        `sharded queue: the busiest of three primaries ≤ ${BUSIEST_PERCENT} % of the Cluster's Redis CPU (QUEUE_SHARDS=${SHARDS})`,
        busiest * 100 <= BUSIEST_PERCENT && cluster.non2xx === 0,
        `${percent(busiest)} (shares ${shares.map(percent).join(', ')}), ${cluster.non2xx} non-2xx`,
      ],
    ],
  };
}
