import { Gauge, type Registry } from 'prom-client';
import type { OldestPending } from '../jobs/queue-readers.js';

/**
 * Per configured destination (by name, never its URL): the age of the oldest forward job still
 * pending for it, read at scrape (bounded: see `oldestPending`; a failed read keeps the last
 * values), and whether it is paused. Every process reads the same queue: aggregated by `max`.
 */
export function registerForwardGauges(
  registries: readonly Registry[],
  destinations: readonly string[],
  oldestPending: OldestPending,
  scanned: number,
): void {
  new Gauge({
    name: 'webhook_forward_oldest_waiting_seconds',
    help: `Age in seconds of the oldest forward job still to send to the destination (waiting or delayed for a retry), 0 when none; of the ${String(scanned)} jobs due first at the most, read at scrape`,
    labelNames: ['destination'],
    registers: [...registries],
    aggregator: 'max',
    async collect() {
      const ages = await oldestPending().catch(() => undefined);
      if (ages === undefined) return;
      for (const destination of destinations) this.set({ destination }, ages.get(destination) ?? 0);
    },
  });
  const paused = new Gauge({
    name: 'webhook_forward_destination_paused',
    help: '1 while forwarding to the destination is paused, else 0; always 0 for now (no destination can be paused yet)',
    labelNames: ['destination'],
    registers: [...registries],
    aggregator: 'max',
  });
  for (const destination of destinations) paused.set({ destination }, 0);
}
