import type { Telemetry } from 'bullmq';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { DownloadSettings } from '../config/download-settings.js';
import type { OperationsSettings } from '../config/operations-settings.js';
import type { ProcessSettings } from '../config/process-settings.js';
import type { RedisSettings } from '../config/redis-settings.js';
import type { StorageSettings } from '../config/storage-settings.js';
import { queueReaders } from '../jobs/queue-readers.js';
import { shardPrefixes } from '../queue/delivery-keys.js';
import { FORWARD_QUEUE } from '../forwarding/forward-queue.js';
import { startJobWorker } from '../jobs/start-job-worker.js';
import { createWorkerRedis, redisTarget, type RedisConfig } from '../redis/connections.js';
import { isConnectionError, watchRedis } from '../redis/watch-redis.js';
import { WriteGate } from '../redis/write-gate.js';
import { createRegistry } from '../telemetry/metrics.js';
import { registerHoldGauge } from '../telemetry/redis-gauges.js';
import { registerStoreGauges } from './store-gauges.js';
import { createWorkerMetrics } from './worker-metrics.js';
import { createLiveness, type Liveness } from './liveness.js';
import { createWorkerContext, type ContextOptions, type ContextSettings } from './dispatch.js';
import { drainInReserve } from './reserve-drain.js';
import {
  createDeliveryStages,
  describeDeliveryJob,
  runDelivery,
  type DeliveryWorker,
  type StagesSettings,
} from './run-delivery.js';

/**
 * What a worker process reads: its connection, its write gate's reserve, its own job settings,
 * the store's gauges, and what the parts it starts read (the handlers' context, the stages).
 */
export type WorkerSettings = RedisConfig &
  Pick<RedisSettings, 'queuePrefix' | 'redisMemoryReservePercent'> &
  Pick<ProcessSettings, 'workerConcurrency' | 'workerLockMs'> &
  Pick<OperationsSettings, 'workerStallMs'> &
  Pick<DownloadSettings, 'downloadAttempts' | 'downloadBackoffMs'> &
  Pick<StorageSettings, 'audioStore' | 'audioDir'> &
  ContextSettings &
  StagesSettings;

export interface WorkerOptions extends Omit<ContextOptions, 'metrics'> {
  /** bullmq-otel, when tracing is on: each job's span joins the delivery's trace. @defaultValue none */
  readonly telemetry?: Telemetry | undefined;
  /**
   * Another registry the worker's own metrics (jobs, downloads, store, archive, forwards) are
   * shown on: with ROLE=all, the receiver's, so PORT's /metrics has them too. @defaultValue none
   */
  readonly alsoRegisterOn?: Registry | undefined;
}

export interface RunningWorkers {
  /** The first shard's BullMQ worker (the only one, with one shard). */
  readonly worker: DeliveryWorker;
  /** One per shard, by index. */
  readonly workers: readonly DeliveryWorker[];
  /** Is the worker doing its job (not just alive)? WORKER_HEALTH_PORT's /healthz asks this. */
  readonly liveness: Liveness;
  /** What WORKER_HEALTH_PORT's /metrics shows: the worker's metrics, queue, Redis, process. */
  readonly registry: Registry;
  /** Stops taking jobs, waits for the active ones (not while Redis is down), closes connections. */
  close(): Promise<void>;
}

/**
 * A worker process's wiring: its Redis connection, the handlers' context, the stages each
 * delivery runs through (createDeliveryStages, run in order by runDelivery: run-delivery.ts), the BullMQ worker
 * that runs them, and what tells whether it works (liveness, /metrics).
 */
export async function startWorkers(
  config: WorkerSettings,
  logger: Logger,
  options: WorkerOptions = {},
): Promise<RunningWorkers> {
  const redis = createWorkerRedis(config);
  const connection = watchRedis(redis, logger, 'worker', redisTarget(config));
  // BullMQ repeats its connections' errors on the Queue and the Worker: an outage is logged
  // once, by state, however many objects report it.
  // A refused write (OOM, READONLY, LOADING, MISCONF) is a state too: the gate logs it once,
  // holds the workers' intake, probes with backoff and lets them go on once Redis takes writes.
  // The receivers stop at the reserve; halfway into it the delivery worker holds back while
  // forwards wait (a delivery handled becomes forward messages and timeline steps before its body is
  // freed) and otherwise drains one job at a time (reserve-drain.ts, docs/capacity.md).
  const gate = new WriteGate(redis, {
    logger,
    name: 'worker',
    probeKey: `${config.queuePrefix}:write-probe`,
    reservePercent: config.redisMemoryReservePercent / 2,
  }).start();
  const reportError = (error: unknown, msg: string) => {
    if (gate.refused(error)) return;
    if (isConnectionError(error)) connection.down(error);
    else logger.error({ err: error }, msg);
  };
  // For reads only (liveness, /metrics): shares the worker's connection.
  const shards = shardPrefixes(config.queuePrefix, config.queueShards);
  const deliveries = queueReaders('deliveries', redis, shards, reportError);
  const { counts } = deliveries;
  const forwards = queueReaders(FORWARD_QUEUE, redis, config.queuePrefix, reportError);
  const registry = createRegistry({
    jobCounts: counts,
    oldestWaiting: deliveries.oldestWaiting,
    redis,
  });
  // The worker's own metrics go on its registry, and on the receiver's with ROLE=all.
  const registries = [
    registry,
    ...(options.alsoRegisterOn === undefined ? [] : [options.alsoRegisterOn]),
  ];
  const metrics = createWorkerMetrics(registries);
  // The worker's own /metrics only: with ROLE=all, PORT's /metrics shows the receiver's gate.
  registerHoldGauge([registry], () => gate.holding);
  // AUDIO_DIR's filesystem; a fork's own store (src/custom/store.ts) may keep audio elsewhere.
  if (config.audioStore === 'local') registerStoreGauges(registries, config.audioDir);
  const context = await createWorkerContext(config, logger, redis, {
    hooks: options.hooks,
    ...(options.customEvents === undefined ? {} : { customEvents: options.customEvents }),
    store: options.store,
    ca: options.ca,
    metrics,
  }).catch((error: unknown) => {
    gate.stop();
    redis.disconnect();
    throw error;
  });

  const liveness = createLiveness({
    stallMs: config.workerStallMs,
    concurrency: config.workerConcurrency,
    // Bounded: a probe that hangs on Redis gets the worker restarted for an outage.
    readyJobs: async () => {
      const ready = await counts('waiting', 'prioritized');
      return (ready.waiting ?? 0) + (ready.prioritized ?? 0);
    },
    isPaused: () => workers.every((each) => each.isPaused()),
  });
  const stages = createDeliveryStages(config, logger, redis, context, {
    registries,
    reportError,
    gate,
  });
  // Every worker serves every shard: one BullMQ worker per shard's queue.
  const workers: DeliveryWorker[] = shards.map((prefix, index) =>
    startJobWorker((job) => liveness.track(() => runDelivery(job, stages)), {
      queue: 'deliveries',
      connection: redis,
      prefix,
      telemetry: options.telemetry,
      concurrency: shardConcurrency(config.workerConcurrency, shards.length, index),
      lockMs: config.workerLockMs,
      policy: { attempts: config.downloadAttempts, backoffMs: config.downloadBackoffMs },
      logger,
      reportError,
      gate,
      // Under an evicting policy the receivers refuse; what is queued is still drained. In the
      // reserve, drainInReserve decides.
      holdsFor: (reason) => reason !== 'eviction_policy' && reason !== 'memory_reserve',
      label: 'job',
      whenFailed: 'kept for inspection (audio-webhooks failed)',
      describe: describeDeliveryJob,
      onRun: (job, outcome, seconds) => {
        metrics.jobSeconds.observe({ event: job.name, outcome }, seconds);
      },
    }),
  );
  const forwardsWaiting = async () => {
    const waiting = await forwards.counts('waiting', 'prioritized', 'active', 'delayed');
    return Object.values(waiting).reduce((sum, n) => sum + n, 0);
  };
  const stops = workers.map((worker) => {
    worker.on('failed', (job, error) => {
      // BullMQ sets finishedOn when the job moved to failed for good (a retry resets it to null).
      if (job !== undefined) stages.timeline?.failed(job, error.message, Boolean(job.finishedOn));
    });
    return drainInReserve(worker, gate, forwardsWaiting);
  });
  const stopDraining = () => {
    for (const stop of stops) stop();
  };
  const [worker] = workers as [DeliveryWorker];

  return {
    worker,
    workers,
    liveness,
    registry,
    async close() {
      // With Redis away no active job can finish (completing one is a Redis write), and a
      // graceful close would wait for the shutdown deadline: leave them to the stalled-job check.
      gate.stop();
      stopDraining();
      const redisDown = redis.status !== 'ready';
      await Promise.all(workers.map((each) => each.close(redisDown)));
      await stages.close();
      await deliveries.close();
      await forwards.close();
      await context.dispatcher.close();
      if (redisDown) redis.disconnect();
      else
        await redis.quit().catch(() => {
          redis.disconnect();
        });
    },
  };
}

/**
 * The jobs at once of shard `index`'s BullMQ worker: the process's WORKER_CONCURRENCY split among
 * the shards (the first ones take the remainder), and at least one each, so a process with fewer
 * jobs at once than shards still serves every shard.
 */
export function shardConcurrency(total: number, shards: number, index: number): number {
  return Math.max(1, Math.floor(total / shards) + (index < total % shards ? 1 : 0));
}
