import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { JobCounts } from '../jobs/job-counts.js';
import type { RedisConnection } from '../redis/connections.js';
import type { OldestWaiting } from '../jobs/queue-readers.js';
import { registerOldestWaiting } from './queue-age.js';
import { registerRedisGauges } from './redis-gauges.js';

export type DeliveryOutcome =
  | 'accepted'
  | 'duplicate'
  | 'ignored'
  | 'bad_request'
  | 'unauthorized'
  | 'too_large'
  | 'unsupported_media_type'
  | 'unavailable'
  | 'error';

export interface Metrics {
  readonly registry: Registry;
  readonly deliveries: Counter<'outcome' | 'event'>;
  readonly signatureFailures: Counter<'reason'>;
  /** Labelled `result`: `stored`, or `failed` (a stalled or failing Redis shows here too). */
  readonly enqueueSeconds: Histogram<'result'>;
  readonly signatureMatches: Counter<'secret'>;
  readonly clockSkewSeconds: Histogram;
}

const QUEUE_STATES = [
  'waiting',
  'prioritized',
  'active',
  'delayed',
  'failed',
  'completed',
] as const;
/** Jobs not yet taken: BullMQ keeps delayed and prioritized ones outside the wait list. */
const BACKLOG_STATES = ['waiting', 'prioritized', 'delayed'] as const;

/** The name KEDA's ScaledObject (deploy/kubernetes) queries; a test keeps the two in step. */
export const BACKLOG_METRIC = 'webhook_queue_backlog';

/** The names a queue's two gauges are exported under. */
export interface QueueGaugeNames {
  /** Jobs by state. */
  readonly jobs: string;
  readonly queue: string;
  /** Jobs a worker would take: what workers are scaled on. */
  readonly backlog: string;
  readonly backlogStates: readonly (typeof QUEUE_STATES)[number][];
  readonly backlogHelp: string;
}

const DELIVERY_GAUGES: QueueGaugeNames = {
  jobs: 'webhook_queue_jobs',
  queue: 'the delivery queue',
  backlog: BACKLOG_METRIC,
  backlogStates: BACKLOG_STATES,
  backlogHelp:
    'Jobs not yet taken by a worker: waiting + prioritized + delayed (scale workers on this)',
};

/**
 * Gauges read from Redis only when Prometheus scrapes: the queue by state, and the backlog the
 * workers are scaled on, from ONE getJobCounts per scrape (prom-client collects both at once, so
 * they share the call in flight). During a Redis outage a scrape still answers (job-counts.ts);
 * they keep their values. Every receiver process reads the same queue,
 * so across processes these are the same number, not parts of a sum: aggregated by `max`.
 */
export function registerQueueGauges(
  registries: readonly Registry[],
  jobCounts: JobCounts,
  names: QueueGaugeNames = DELIVERY_GAUGES,
): void {
  let inFlight: Promise<Record<string, number> | undefined> | undefined;
  const counts = () =>
    (inFlight ??= jobCounts(...QUEUE_STATES)
      .catch(() => undefined)
      .finally(() => {
        inFlight = undefined;
      }));
  new Gauge({
    name: names.jobs,
    help: `Jobs in ${names.queue} by state`,
    labelNames: ['state'],
    registers: [...registries],
    aggregator: 'max',
    async collect() {
      const byState = await counts();
      for (const state of QUEUE_STATES) {
        const count = byState?.[state];
        if (count !== undefined) this.set({ state }, count);
      }
    },
  });
  new Gauge({
    name: names.backlog,
    help: names.backlogHelp,
    registers: [...registries],
    aggregator: 'max',
    async collect() {
      const byState = await counts();
      if (byState !== undefined)
        this.set(names.backlogStates.reduce((sum, state) => sum + (byState[state] ?? 0), 0));
    },
  });
}

/** What a process's /metrics reads from Redis when scraped: the delivery queue, the server. */
export interface ScrapeSources {
  readonly jobCounts: JobCounts;
  readonly oldestWaiting: OldestWaiting;
  /** The process's connection: `webhook_redis_up`, and the server's memory. */
  readonly redis: RedisConnection;
}

/**
 * Process metrics, plus, when given what to read, the delivery queue's gauges (by state,
 * backlog, oldest waiting) and Redis's: the worker's /metrics, and the start of the receiver's.
 */
export function createRegistry(sources?: ScrapeSources): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  if (sources) {
    registerQueueGauges([registry], sources.jobCounts);
    registerOldestWaiting([registry], 'deliveries', sources.oldestWaiting);
    registerRedisGauges(registry, sources.redis);
  }
  return registry;
}

/**
 * A registry per app (no global singletons), so tests and the benchmark can build many apps in
 * one process.
 */
export function createMetrics(sources?: ScrapeSources): Metrics {
  const registry = createRegistry(sources);
  return {
    registry,
    deliveries: new Counter({
      name: 'webhook_deliveries_total',
      help: 'Webhook deliveries by outcome and (when known) event',
      labelNames: ['outcome', 'event'],
      registers: [registry],
    }),
    signatureFailures: new Counter({
      name: 'webhook_signature_failures_total',
      help: 'Rejected signatures by reason',
      labelNames: ['reason'],
      registers: [registry],
    }),
    enqueueSeconds: new Histogram({
      name: 'webhook_enqueue_duration_seconds',
      help: 'Time to store a delivery (dedupe + enqueue, one Redis round trip), by result: stored or failed',
      labelNames: ['result'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
    signatureMatches: new Counter({
      name: 'webhook_signature_matches_total',
      help: 'Verified deliveries by the index of the configured secret that verified (0 = first): rotation progress',
      labelNames: ['secret'],
      registers: [registry],
    }),
    clockSkewSeconds: new Histogram({
      name: 'webhook_signature_clock_skew_seconds',
      help: 'now − t of verified deliveries, in seconds (negative: the sender clock is ahead)',
      buckets: [-300, -120, -60, -30, -10, -5, -1, 0, 1, 5, 10, 30, 60, 120, 300],
      registers: [registry],
    }),
  };
}
