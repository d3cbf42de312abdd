import { Gauge, type Registry } from 'prom-client';
import type { OldestWaiting } from '../jobs/queue-readers.js';

export const OLDEST_WAITING_METRIC = 'webhook_queue_oldest_waiting_seconds';

/**
 * Registers, on each registry, ONE gauge of every queue's oldest waiting job, labelled `queue`,
 * read when Prometheus scrapes. The delivery queue's is added where the registry is made, the
 * forward queue's by forwarding, on the same registries (with ROLE=all, the receiver's too): a
 * name is registered once per registry, so the queues share its gauge. A failed read keeps the
 * queue's last value. Every process reads the same queue: aggregated by `max`.
 */
export function registerOldestWaiting(
  registries: readonly Registry[],
  queueName: string,
  oldestWaiting: OldestWaiting,
): void {
  for (const registry of registries) {
    let readers = sources.get(registry);
    if (readers === undefined) {
      readers = new Map();
      sources.set(registry, readers);
      oldestWaitingGauge(registry, readers);
    }
    readers.set(queueName, oldestWaiting);
  }
}

/** The queues each registry's gauge reads; per registry, as the registries are per process. */
const sources = new WeakMap<Registry, Map<string, OldestWaiting>>();

function oldestWaitingGauge(registry: Registry, readers: ReadonlyMap<string, OldestWaiting>) {
  return new Gauge({
    name: OLDEST_WAITING_METRIC,
    help: 'Age in seconds of the oldest job ready to run (waiting + prioritized; delayed jobs, which wait for their backoff, do not count), 0 when none; a job run before counts from its last run',
    labelNames: ['queue'],
    registers: [registry],
    aggregator: 'max',
    async collect() {
      await Promise.all(
        [...readers].map(async ([queue, read]) => {
          const seconds = await read().catch(() => undefined);
          if (seconds !== undefined) this.set({ queue }, seconds);
        }),
      );
    },
  });
}
