import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Queue } from 'bullmq';
import { boundedJobCounts } from '../jobs/job-counts.js';
import {
  boundedOldestPending,
  boundedOldestWaiting,
  type OldestPending,
} from '../jobs/queue-readers.js';
import type { RedisConnection } from '../redis/connections.js';
import { registerQueueGauges } from '../telemetry/metrics.js';
import { registerOldestWaiting } from '../telemetry/queue-age.js';
import { FORWARD_QUEUE, type ForwardJobData } from './forward-queue.js';

/** The name KEDA's second trigger (deploy/kubernetes) queries; a test keeps the two in step. */
export const FORWARD_BACKLOG_METRIC = 'webhook_forward_backlog';

/**
 * Forward jobs a scrape looks at per state for each destination's oldest pending one: the 100
 * oldest waiting and the 100 delayed due first, with their messages (at most 200 × MAX_BODY_BYTES).
 */
const SCAN_PER_STATE = 100;

/** What a forward's attempts are counted and timed with. */
export interface ForwardMetrics {
  readonly forwards: Counter<'destination' | 'result'>;
  readonly latency: Histogram<'destination'>;
  readonly transitions: Counter<'destination' | 'to'>;
}

/** The counters and the histogram of forwarding, shown in every one of `registries`. */
export function createForwardMetrics(registries: readonly Registry[]): ForwardMetrics {
  return {
    forwards: new Counter({
      name: 'webhook_forwards_total',
      help: 'Forward attempts by destination (without credentials) and result: sent, retrying (failed, will be tried again) or failed (given up: its attempts run out, refused for good, or held past FORWARD_HOLD_SECONDS; listed by `failures`)',
      labelNames: ['destination', 'result'],
      registers: [...registries],
    }),
    latency: new Histogram({
      name: 'webhook_forward_send_seconds',
      help: 'Time of one send to the destination, from the request to its answer (or the error)',
      labelNames: ['destination'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [...registries],
    }),
    transitions: new Counter({
      name: 'webhook_forward_destination_transitions_total',
      help: 'Pauses (to="paused": FORWARD_PAUSE_AFTER failures in a row) and resumes (to="active": a probe succeeded) this process made; `forward pause|resume` are counted by the state gauge',
      labelNames: ['destination', 'to'],
      registers: [...registries],
    }),
  };
}

/** The forward queue's gauges (its jobs, backlog, oldest waiting) and each destination's. */
export function registerForwardQueueGauges(
  registries: readonly Registry[],
  queue: Queue<ForwardJobData>,
  redis: RedisConnection,
  seen: SeenState,
  destinations: readonly string[],
): void {
  registerQueueGauges(registries, boundedJobCounts(queue, redis), {
    jobs: 'webhook_forward_queue_jobs',
    queue: 'the forward queue (delayed: waiting to try a destination again)',
    backlog: FORWARD_BACKLOG_METRIC,
    // Delayed forwards wait for a destination to come back; more workers would not help them.
    backlogStates: ['waiting', 'prioritized'],
    backlogHelp: 'Forwards ready to send: waiting + prioritized (KEDA scales workers on this too)',
  });
  registerOldestWaiting(registries, FORWARD_QUEUE, boundedOldestWaiting(queue, redis));
  registerForwardGauges(
    registries,
    seen,
    destinations,
    boundedOldestPending(queue, redis, (job) => job.data.destinations, SCAN_PER_STATE),
    2 * SCAN_PER_STATE,
  );
}

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
function registerForwardGauges(
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
