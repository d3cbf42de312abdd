import { Gauge, type Registry } from 'prom-client';
import type { OldestPending } from '../jobs/queue-readers.js';

/** What a process knows of a destination's shared state (forwarding/destination-board.ts). */
export interface SeenState {
  get(
    name: string,
  ): { readonly state: 'active' | 'paused'; readonly oldestHeldAt?: number } | undefined;
}

/**
 * Per configured destination (by name, never its URL): the age of the oldest message still to
 * send to it (the jobs due first, read at scrape and bounded: see `oldestPending`, and the held
 * ones, oldest first: a failed read keeps the last values), and whether it is paused (as this
 * process last read it, a tick ago at most). Every process reads the same state: aggregated by
 * `max`.
 */
export function registerForwardGauges(
  registries: readonly Registry[],
  seen: SeenState,
  destinations: readonly string[],
  oldestPending: OldestPending,
  scanned: number,
): void {
  new Gauge({
    name: 'webhook_forward_oldest_waiting_seconds',
    help: `Age in seconds of the oldest message still to send to the destination (waiting, delayed for a retry, or held while it is paused), 0 when none; of the ${String(scanned)} jobs due first and the held ones, read at scrape`,
    labelNames: ['destination'],
    registers: [...registries],
    aggregator: 'max',
    async collect() {
      const ages = await oldestPending().catch(() => undefined);
      if (ages === undefined) return;
      const now = Date.now();
      for (const destination of destinations) {
        const heldAt = seen.get(destination)?.oldestHeldAt;
        const held = heldAt === undefined ? 0 : Math.max(0, (now - heldAt) / 1000);
        this.set({ destination }, Math.max(held, ages.get(destination) ?? 0));
      }
    },
  });
  new Gauge({
    name: 'webhook_forward_destination_paused',
    help: '1 while forwarding to the destination is paused (FORWARD_PAUSE_AFTER failures in a row, or `forward pause`), else 0',
    labelNames: ['destination'],
    registers: [...registries],
    aggregator: 'max',
    collect() {
      for (const destination of destinations) {
        this.set({ destination }, seen.get(destination)?.state === 'paused' ? 1 : 0);
      }
    },
  });
}
