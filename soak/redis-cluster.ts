import { execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  ask as askAny,
  infoField as field,
  parseClusterNodes as parseNodes,
  waitFor,
  type ClusterNode,
} from '../harness/private-cluster.js';
import { freePort } from '../harness/private-redis.js';
import { startRedisServer, type Fsync, type RedisServer } from './redis-server.js';

const run = promisify(execFile);

/**
 * `--redis cluster`: the service's Redis as a Cluster of three primaries with one replica each,
 * made as an operator makes one (`redis-cli --cluster create`), every node persistent as the
 * single server is (redis-server.ts) and in a directory of its own, so a node killed and started
 * again comes back from its own append-only file and `nodes.conf` and rejoins the Cluster
 * (as a replica of whichever node took its slots). A node is declared failed after
 * NODE_TIMEOUT_MS unanswered, and its replica then takes its slots.
 */
export const NODE_TIMEOUT_MS = 2_000;

export interface RedisCluster {
  /** Every server, primaries and replicas. */
  readonly nodes: readonly RedisServer[];
  /** `host:port,…` of every server, for REDIS_CLUSTER_NODES. */
  readonly seeds: string;
  /** The primaries serving slots now, by port, as the running nodes see them. */
  primaries(): Promise<ClusterNode[]>;
  /** Resolves once `gone` is seen failed and other primaries serve every slot it served. */
  failedOver(gone: ClusterNode, timeoutMs: number): Promise<ClusterNode[]>;
  /**
   * Resolves once the Cluster is whole again: every node running and saying `cluster_state:ok`,
   * none seen failed, and every primary with a replica whose link is up and first sync done.
   */
  whole(timeoutMs: number): Promise<void>;
  /** The role (`master` or `slave`) the node on `port` says it has. */
  roleOf(port: number): Promise<string | undefined>;
  /** SIGKILLs every node. */
  kill(): Promise<void>;
}

const PRIMARIES = 3;

/** One command to the server on `port`, its answer as text. */
const ask = async (port: number, ...args: string[]) => String(await askAny(port, ...args));

/** `check` until it is true, within `timeoutMs`; the error names what was waited for. */
const until = (what: () => string, check: () => Promise<boolean>, timeoutMs: number) =>
  waitFor(
    () => `redis cluster: ${what()}`,
    async () => ((await check()) ? true : undefined),
    {
      timeoutMs,
      everyMs: 200,
    },
  );

export async function startRedisCluster(dir: string, fsync: Fsync): Promise<RedisCluster> {
  const nodes: RedisServer[] = [];
  const kill = async () => {
    for (const node of nodes) await node.kill();
  };
  const running = () => nodes.filter((node) => node.pid() !== undefined);
  /** CLUSTER NODES as the first running node that answers sees it. */
  const view = async (): Promise<ClusterNode[]> => {
    for (const node of running()) {
      const text = await ask(node.port, 'CLUSTER', 'NODES').catch(() => undefined);
      if (text !== undefined) return parseNodes(text);
    }
    throw new Error('no Cluster node answers');
  };
  const serving = (seen: readonly ClusterNode[]) =>
    seen
      .filter((n) => n.flags.includes('master') && !n.flags.includes('fail') && n.slots.length > 0)
      .sort((a, b) => a.port - b.port);
  let lastSeen = '';
  const whole = async (timeoutMs: number) => {
    await until(
      () => `whole again (last seen: ${lastSeen})`,
      async () => {
        if (running().length !== nodes.length) return false;
        const infos = await Promise.all(
          nodes.map(async (node) => ({
            cluster: await ask(node.port, 'CLUSTER', 'INFO'),
            replication: await ask(node.port, 'INFO', 'replication'),
            nodes: parseNodes(await ask(node.port, 'CLUSTER', 'NODES')),
          })),
        );
        const synced = infos.filter(
          ({ replication }) =>
            field(replication, 'role') === 'slave' &&
            field(replication, 'master_link_status') === 'up' &&
            field(replication, 'master_sync_in_progress') === '0',
        ).length;
        const states = infos.map(({ cluster }) => field(cluster, 'cluster_state'));
        const failed = infos.filter(({ nodes: seen }) =>
          seen.some((n) => n.flags.includes('fail') || n.flags.includes('fail?')),
        ).length;
        lastSeen = `states ${states.join(',')}, ${String(synced)} replicas synced, ${String(failed)} nodes seeing a failure`;
        return (
          states.every((state) => state === 'ok') &&
          synced === nodes.length - PRIMARIES &&
          failed === 0
        );
      },
      timeoutMs,
    );
  };
  try {
    for (let i = 0; i < PRIMARIES * 2; i++) {
      const nodeDir = join(dir, `node-${String(i)}`);
      mkdirSync(nodeDir, { recursive: true });
      nodes.push(
        await startRedisServer(nodeDir, fsync, [
          '--cluster-enabled',
          'yes',
          '--cluster-node-timeout',
          String(NODE_TIMEOUT_MS),
          // The bus port is chosen too: port + 10000, its default, may be taken.
          '--cluster-port',
          String(await freePort()),
        ]),
      );
    }
    await run('redis-cli', [
      '--cluster',
      'create',
      ...nodes.map((node) => `127.0.0.1:${String(node.port)}`),
      '--cluster-replicas',
      '1',
      '--cluster-yes',
    ]);
    await whole(60_000);
  } catch (error: unknown) {
    await kill();
    throw error;
  }
  return {
    nodes,
    seeds: nodes.map((node) => `127.0.0.1:${String(node.port)}`).join(','),
    primaries: async () => serving(await view()),
    async failedOver(gone, timeoutMs) {
      let now: ClusterNode[] = [];
      const served = (slot: number) =>
        now.some((n) => n.id !== gone.id && n.slots.some(([a, b]) => a <= slot && slot <= b));
      await until(
        () => `the slots of ${String(gone.port)} served by another primary`,
        async () => {
          const seen = await view();
          now = serving(seen);
          return (
            seen.some((n) => n.id === gone.id && n.flags.includes('fail')) &&
            gone.slots.every(([from, to]) => served(from) && served(to))
          );
        },
        timeoutMs,
      );
      return now;
    },
    whole,
    roleOf: async (port) => field(await ask(port, 'INFO', 'replication'), 'role'),
    kill,
  };
}
