import { Gauge, type Registry } from 'prom-client';
import { JOB_COUNTS_DEADLINE_MS } from '../jobs/job-counts.js';
import type { RedisConnection } from '../redis/connections.js';
import { withDeadline } from '../util/deadline.js';
import { HOLD_REASONS, type HoldReason } from '../redis/redis-memory.js';

/** A field of INFO's `name:value` lines, as a number; undefined when absent. */
function infoField(info: string, name: string): number | undefined {
  const value = new RegExp(`^${name}:(\\d+)\\r?$`, 'm').exec(info)?.[1];
  return value === undefined ? undefined : Number(value);
}

/**
 * The process's Redis connection, on its /metrics: whether it is ready (its state, no call),
 * and the server's memory from ONE `INFO memory` per scrape (the two gauges share the call in
 * flight), bounded like the queue's counts. The queue's Redis is `noeviction`: at maxmemory,
 * every new delivery is refused. A failed read keeps the last values; before the first answer
 * the memory gauges are absent, not 0. Aggregated over receiver processes: `up` by `min` (one
 * process cut off from Redis answers 503), the server's memory by `max` (one server, read by
 * each). With a Redis Cluster, the memory is that of the node the client asked.
 */
export function registerRedisGauges(registry: Registry, redis: RedisConnection): void {
  let inFlight: Promise<string | undefined> | undefined;
  const info = () =>
    (inFlight ??= (
      redis.status === 'ready'
        ? withDeadline(redis.info('memory'), JOB_COUNTS_DEADLINE_MS, 'INFO memory')
        : Promise.reject(new Error(`Redis is ${redis.status}`))
    )
      .catch(() => undefined)
      .finally(() => {
        inFlight = undefined;
      }));
  new Gauge({
    name: 'webhook_redis_up',
    help: "1 when this process's Redis connection is ready, else 0 (receiver processes: the lowest)",
    registers: [registry],
    aggregator: 'min',
    collect() {
      this.set(redis.status === 'ready' ? 1 : 0);
    },
  });
  const memory = (name: string, field: string, help: string) => {
    const gauge = new Gauge({
      name,
      help,
      registers: [registry],
      aggregator: 'max',
      async collect() {
        const text = await info();
        const value = text === undefined ? undefined : infoField(text, field);
        if (value !== undefined) this.set(value);
      },
    });
    gauge.remove();
  };
  memory(
    'webhook_redis_used_memory_bytes',
    'used_memory',
    "Bytes the Redis server uses (INFO memory's used_memory), read at scrape",
  );
  memory(
    'webhook_redis_maxmemory_bytes',
    'maxmemory',
    "The Redis server's maxmemory in bytes (0: no limit), read at scrape; at it, a noeviction Redis refuses new deliveries",
  );
}

/**
 * `webhook_redis_holding{reason}`: 1 for the reason a process holds its writes back now
 * (redis/write-gate.ts), 0 for the others; the highest over a receiver's processes.
 */
export function registerHoldGauge(
  registries: readonly Registry[],
  holding: () => HoldReason | undefined,
): void {
  new Gauge({
    name: 'webhook_redis_holding',
    help: '1 while this process holds writes back for this reason: eviction_policy, memory_reserve (deliveries get 503), oom, readonly, loading, misconf (Redis refuses writes)',
    labelNames: ['reason'],
    registers: [...registries],
    aggregator: 'max',
    collect() {
      const now = holding();
      for (const reason of HOLD_REASONS) this.set({ reason }, reason === now ? 1 : 0);
    },
  });
}
