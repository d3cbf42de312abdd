/**
 * A Redis Cluster of the caller's own on this machine, for the tests, the soak and the bench:
 * `redis-server` on PATH, every server on a free port, stopped by the caller.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { dropConnection } from '../src/redis/connections.js';
import { eventually } from '../src/util/eventually.js';
import { freePort, startPrivateRedis, type PrivateRedis } from './private-redis.js';

const run = promisify(execFile);

export interface PrivateCluster {
  /** Every server, primaries and replicas, in the order `redis-cli --cluster create` was given. */
  readonly nodes: readonly PrivateRedis[];
  /** `host:port,…` of every server, for REDIS_CLUSTER_NODES. */
  readonly seeds: string;
  /** Stops every server still running. */
  stop(): Promise<void>;
}

/**
 * `ask(port, ...)`: one command to one server on a connection of its own that does not retry;
 * rejects at once when nothing listens there. The connect's bound is a hang bound: on a busy
 * machine a connect to a live server took longer than a second, and the command then failed
 * with "Connection is closed".
 */
export async function ask(port: number, ...args: (string | number)[]): Promise<unknown> {
  const redis = new Redis(port, '127.0.0.1', {
    lazyConnect: true,
    connectTimeout: 10_000,
    commandTimeout: 2_000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    const [command, ...rest] = args;
    return await redis.call(String(command), ...rest);
  } finally {
    dropConnection(redis);
  }
}

/** A field of an INFO section (`INFO replication`, `CLUSTER INFO`), as text. */
export function infoField(info: unknown, field: string): string | undefined {
  return new RegExp(`^${field}:(.*)$`, 'm').exec(String(info))?.[1]?.trim();
}

/** One line of CLUSTER NODES. */
export interface ClusterNode {
  readonly id: string;
  readonly port: number;
  readonly flags: readonly string[];
  /** The primary's id, for a replica; undefined for a primary. */
  readonly primaryId: string | undefined;
  /** Slot ranges served, inclusive. */
  readonly slots: readonly (readonly [number, number])[];
}

/** CLUSTER NODES' text, a node a line. */
export function parseClusterNodes(text: string): ClusterNode[] {
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const [id = '', address = '', flags = '', primary = '', , , , , ...slots] = line.split(' ');
      return {
        id,
        port: Number(/:(\d+)@/.exec(address)?.[1]),
        flags: flags.split(','),
        primaryId: primary === '-' ? undefined : primary,
        slots: slots
          .filter((range) => !range.startsWith('['))
          .map((range) => {
            const [from, to = from] = range.split('-').map(Number);
            return [from ?? 0, to ?? 0] as const;
          }),
      };
    });
}

/** CLUSTER NODES as seen by the server on `port`. */
export async function clusterNodes(port: number): Promise<ClusterNode[]> {
  return parseClusterNodes(String(await ask(port, 'CLUSTER', 'NODES')));
}

/**
 * `check` until it gives a value, within `timeoutMs`; the error names `what` was waited for
 * (eventually's own says only how long), a function's text as it reads at the deadline.
 */
export async function waitFor<T>(
  what: string | (() => string),
  check: () => Promise<T | undefined>,
  { timeoutMs = 30_000, everyMs = 100 } = {},
): Promise<T> {
  try {
    // A check that throws (a server not answering yet) is "not yet".
    return await eventually(() => check().catch(() => undefined), { timeoutMs, everyMs });
  } catch (error: unknown) {
    const text = typeof what === 'string' ? what : what();
    throw new Error(`${text}: not reached within ${String(timeoutMs)} ms`, { cause: error });
  }
}

/**
 * A Redis Cluster of the test's own, made as an operator makes one (`redis-cli --cluster
 * create`): `primaries` primaries with `replicas` replicas each, every port (and cluster bus
 * port) chosen free. Resolves once every server says `cluster_state:ok` and knows every other,
 * and every replica's link to its primary is up and its first sync done.
 */
export async function startPrivateCluster({
  primaries = 3,
  replicas = 0,
  nodeTimeoutMs = 2_000,
} = {}): Promise<PrivateCluster> {
  const count = primaries * (1 + replicas);
  const nodes: PrivateRedis[] = [];
  const stop = async () => {
    for (const node of nodes) await node.stop();
  };
  try {
    for (let i = 0; i < count; i++) {
      nodes.push(
        await startPrivateRedis({
          args: [
            '--cluster-enabled',
            'yes',
            '--cluster-node-timeout',
            String(nodeTimeoutMs),
            // The bus port is chosen too: port + 10000, its default, may be another test's port.
            '--cluster-port',
            String(await freePort()),
          ],
        }),
      );
    }
    await run('redis-cli', [
      '--cluster',
      'create',
      ...nodes.map((node) => `127.0.0.1:${node.port}`),
      '--cluster-replicas',
      String(replicas),
      '--cluster-yes',
    ]);
    await waitFor(
      `cluster_state:ok and ${String(count)} known nodes on every server`,
      async () => {
        const infos = await Promise.all(nodes.map((node) => ask(node.port, 'CLUSTER', 'INFO')));
        return infos.every(
          (info) =>
            infoField(info, 'cluster_state') === 'ok' &&
            infoField(info, 'cluster_known_nodes') === String(count),
        )
          ? true
          : undefined;
      },
      { timeoutMs: 30_000, everyMs: 200 },
    );
    await waitFor(
      `every replica linked to its primary and synced (${String(primaries * replicas)} replicas)`,
      async () => {
        const infos = await Promise.all(nodes.map((node) => ask(node.port, 'INFO', 'replication')));
        const synced = infos.filter(
          (info) =>
            infoField(info, 'role') === 'slave' &&
            infoField(info, 'master_link_status') === 'up' &&
            infoField(info, 'master_sync_in_progress') === '0',
        );
        return synced.length === primaries * replicas ? true : undefined;
      },
      { timeoutMs: 30_000, everyMs: 200 },
    );
  } catch (error: unknown) {
    await stop();
    throw error;
  }
  return {
    nodes,
    seeds: nodes.map((node) => `127.0.0.1:${node.port}`).join(','),
    stop,
  };
}
