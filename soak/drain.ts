import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from 'bullmq';
import { Cluster, Redis } from 'ioredis';
import { FORWARD_QUEUE } from '../src/forwarding/forward-queue.js';
import { DELIVERY_QUEUE, shardPrefixes } from '../src/queue/delivery-keys.js';
import type { System } from './system.js';

/**
 * Waits, after the traffic and the faults have stopped, for the backlog to drain: no delivery
 * pending at the sandbox and no job waiting, active or delayed on the service's queues, three
 * looks in a row a second apart; for at most `boundMs`. What is left then is judged as it is
 * (pending deliveries in flight, acknowledged items not yet everywhere lost).
 */
export interface Drain {
  readonly drained: boolean;
  /** When the last look was taken (epoch ms). */
  readonly atMs: number;
  /** What was still pending at the last look. */
  readonly pending: Readonly<Record<string, number>>;
}

const STATES = ['waiting', 'active', 'delayed', 'prioritized', 'waiting-children'] as const;

export async function drain(system: System, boundMs: number): Promise<Drain> {
  const redis = system.serviceRedis;
  const connection =
    redis.kind === 'single'
      ? new Redis(redis.server.url, { maxRetriesPerRequest: 1 })
      : new Cluster(
          redis.cluster.nodes.map((node) => ({ host: '127.0.0.1', port: node.port })),
          { redisOptions: { maxRetriesPerRequest: 1 } },
        );
  connection.on('error', () => undefined);
  // The deliveries queue of every shard (one, unless QUEUE_SHARDS says more), and the forwards.
  const prefix = system.env.QUEUE_PREFIX ?? 'audio-webhooks';
  const shards = shardPrefixes(prefix, Number(system.env.QUEUE_SHARDS ?? '1'));
  const queues = [
    ...shards.map((shard) => new Queue(DELIVERY_QUEUE, { connection, prefix: shard })),
    new Queue(FORWARD_QUEUE, { connection, prefix }),
  ];
  for (const queue of queues) queue.on('error', () => undefined);
  const deadline = Date.now() + boundMs;
  let quiet = 0;
  let pending: Record<string, number> = {};
  try {
    while (Date.now() < deadline) {
      pending = await look(system, queues).catch((error: unknown) => ({
        [`unreadable: ${String(error)}`]: 1,
      }));
      const total = Object.values(pending).reduce((sum, n) => sum + n, 0);
      quiet = total === 0 ? quiet + 1 : 0;
      if (quiet >= 3) return { drained: true, atMs: Date.now(), pending };
      await sleep(1000);
    }
    return { drained: false, atMs: Date.now(), pending };
  } finally {
    await Promise.all(queues.map((queue) => queue.close().catch(() => undefined)));
    connection.disconnect();
  }
}

async function look(system: System, queues: readonly Queue[]): Promise<Record<string, number>> {
  const deliveries = (await system.sandbox.call('GET', '/sandbox/deliveries')).body as {
    state: string;
  }[];
  const pending: Record<string, number> = {
    sandbox_pending: deliveries.filter((d) => d.state === 'pending').length,
  };
  for (const queue of queues) {
    const counts = await queue.getJobCounts(...STATES);
    for (const state of STATES) {
      const key = `${queue.name}_${state}`;
      pending[key] = (pending[key] ?? 0) + (counts[state] ?? 0);
    }
  }
  return pending;
}
