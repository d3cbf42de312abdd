import { Worker, type Telemetry } from 'bullmq';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { Registry } from 'prom-client';
import { createRegistry } from '../telemetry/metrics.js';
import { boundedJobCounts } from '../queue/job-counts.js';
import {
  createDeliveryQueue,
  DELIVERY_QUEUE,
  deliveryOf,
  handledData,
  jobItemId,
  payloadTooBigToKeep,
  shownId,
  type DeliveryJobData,
} from '../queue/delivery-queue.js';
import { createWorkerRedis, redisTarget } from '../redis/connections.js';
import { isConnectionError, watchRedis } from '../redis/watch-redis.js';
import type { AudioStore } from '../storage/audio-store.js';
import type { CustomEvents } from '../webhooks/custom-events.js';
import { dispatch } from './dispatch.js';
import { withDefaults, type Hooks } from './hooks.js';
import { backoffStrategy } from './retry-policy.js';
import { createLiveness, type Liveness } from './liveness.js';
import { createWorkerContext } from './worker-context.js';
import { startArchiving } from './archive-deliveries.js';
import type { AudioMetadata } from '../storage/audio-store.js';
import { forwardMessage } from '../forward/forward-message.js';
import { startForwarding } from '../forward/start-forwarding.js';

export interface WorkerOptions {
  /**
   * Your hooks (main.ts passes src/custom/hooks.ts); missing ones do nothing.
   * @defaultValue none
   */
  readonly hooks?: Partial<Hooks>;
  /** Your events (main.ts passes src/custom/events.ts). @defaultValue none */
  readonly customEvents?: CustomEvents;
  /** @defaultValue the store AUDIO_STORE chooses (storage/create-audio-store.ts) */
  readonly store?: AudioStore | undefined;
  /** Extra CA certificates the downloader trusts (PEM), on top of DOWNLOAD_CA_FILE. @defaultValue none */
  readonly ca?: string;
  /** bullmq-otel, when tracing is on: each job's span joins the delivery's trace. @defaultValue none */
  readonly telemetry?: Telemetry | undefined;
  /**
   * Another registry the worker's own counters (the archive's) are shown on: with ROLE=all, the
   * receiver's, so PORT's /metrics has them too. @defaultValue none
   */
  readonly alsoRegisterOn?: Registry | undefined;
}

export interface RunningWorkers {
  readonly worker: Worker<DeliveryJobData>;
  /** Is the worker doing its job (not just alive)? WORKER_HEALTH_PORT's /healthz asks this. */
  readonly liveness: Liveness;
  /** Queue gauges and process metrics, for WORKER_HEALTH_PORT's /metrics. */
  readonly registry: Registry;
  /** Stops taking jobs, waits for the active ones (not while Redis is down), closes connections. */
  close(): Promise<void>;
}

/**
 * Completed jobs are kept a day (the audio is stored); failed ones for inspection and replay.
 * Set here rather than on each job, so the receiver's hot path does not carry them.
 */
const KEEP_COMPLETED = { age: 24 * 3600, count: 10_000 } as const;
const KEEP_FAILED = { count: 50_000 } as const;

/** Starts the BullMQ worker that runs every delivery job through dispatch(). */
export async function startWorkers(
  config: Config,
  logger: Logger,
  options: WorkerOptions = {},
): Promise<RunningWorkers> {
  const redis = createWorkerRedis(config);
  const connection = watchRedis(redis, logger, 'worker', redisTarget(config));
  // BullMQ repeats its connections' errors on the Queue and the Worker: an outage is logged
  // once, by state, however many objects report it.
  const reportError = (error: unknown, msg: string) => {
    if (isConnectionError(error)) connection.down(error);
    else logger.error({ err: error }, msg);
  };
  const context = await createWorkerContext(config, logger, redis, {
    hooks: withDefaults(options.hooks),
    ...(options.customEvents === undefined ? {} : { customEvents: options.customEvents }),
    store: options.store,
    ca: options.ca,
  }).catch((error: unknown) => {
    redis.disconnect();
    throw error;
  });

  // For counts only (liveness, /metrics): shares the worker's connection.
  const queue = createDeliveryQueue({ connection: redis, prefix: config.queuePrefix });
  queue.on('error', (error: unknown) => {
    reportError(error, 'queue error');
  });
  const jobCounts = boundedJobCounts(queue, redis);
  const liveness = createLiveness({
    stallMs: config.workerStallMs,
    concurrency: config.workerConcurrency,
    // Bounded: a probe that hangs on Redis gets the worker restarted for an outage.
    readyJobs: async () => {
      const counts = await jobCounts('waiting', 'prioritized');
      return (counts.waiting ?? 0) + (counts.prioritized ?? 0);
    },
    isPaused: () => worker.isPaused(),
  });
  const registry = createRegistry(jobCounts);
  // The worker's own counters go on its registry, and on the receiver's with ROLE=all.
  const registries = [
    registry,
    ...(options.alsoRegisterOn === undefined ? [] : [options.alsoRegisterOn]),
  ];
  const archiver = startArchiving(config, context.store, logger, registries);

  const forwarding = startForwarding(config, logger, redis, { registries, reportError });

  const worker = new Worker<DeliveryJobData>(
    DELIVERY_QUEUE,
    (job) =>
      liveness.track(async () => {
        const delivery = deliveryOf(job.data);
        // Handled already: its worker died after the last step below, before BullMQ marked it.
        if (delivery === undefined) return undefined;
        const info = {
          delivery,
          jobId: job.id ?? '',
          receivedAt: job.data.receivedAt,
          attempt: job.attemptsMade + 1,
          // A job taken over after its worker died keeps attemptsMade; attemptsStarted counts it.
          firstRun: job.attemptsStarted <= 1 && job.data.replay === undefined,
          replay: job.data.replay !== undefined,
        };
        // Archived while it is handled, not before: the archive never delays a delivery. The job
        // ends only once its archive write has ended (done, or failed and counted).
        const archived = archiver?.record(info);
        let result: unknown;
        try {
          let stored: AudioMetadata | undefined;
          result = await dispatch(
            { ...info, onStored: (metadata) => (stored = metadata) },
            context,
          );
          // Handled: now the message. A worker killed before this line leaves the job to be run
          // again, which finds the audio stored (no download) and forwards then.
          await forwarding?.forward(
            job.id ?? '',
            forwardMessage(delivery, job.data.body, new Date(), stored),
          );
        } finally {
          await archived;
        }
        // Last: the completed job keeps a record, not the payload (the archive and the forward
        // job hold it). A 1.5 MB body left 22.6 MB in Redis when completed jobs kept it.
        if (payloadTooBigToKeep(job.data.body))
          await job.updateData(handledData(job.data, delivery));
        return result;
      }),
    {
      // Shared with the records; BullMQ duplicates it for its blocking reads.
      connection: redis,
      prefix: config.queuePrefix,
      ...(options.telemetry === undefined ? {} : { telemetry: options.telemetry }),
      concurrency: config.workerConcurrency,
      lockDuration: config.workerLockMs,
      stalledInterval: config.workerLockMs,
      // A job whose worker died is run again; twice in a row means it is what kills workers.
      maxStalledCount: 2,
      removeOnComplete: KEEP_COMPLETED,
      removeOnFail: KEEP_FAILED,
      settings: {
        backoffStrategy: backoffStrategy({
          attempts: config.downloadAttempts,
          backoffMs: config.downloadBackoffMs,
        }),
      },
    },
  );
  worker.on('failed', (job, error) => {
    // BullMQ sets finishedOn when the job moved to failed for good (a retry resets it to null).
    const final = job === undefined || Boolean(job.finishedOn);
    logger[final ? 'error' : 'warn'](
      {
        jobId: job?.id,
        event: job?.name,
        id: job === undefined ? undefined : shownId(jobItemId(job.data) ?? ''),
        attemptsMade: job?.attemptsMade,
        reason: error.message,
      },
      final ? 'job failed; kept for inspection (audio-webhooks failed)' : 'job failed; will retry',
    );
  });
  worker.on('error', (error) => {
    reportError(error, 'worker error');
  });

  return {
    worker,
    liveness,
    registry,
    async close() {
      // With Redis away no active job can finish (completing one is a Redis write), and a
      // graceful close would wait for the shutdown deadline: leave them to the stalled-job check.
      const redisDown = redis.status !== 'ready';
      archiver?.stop();
      await worker.close(redisDown);
      await forwarding?.close();
      await queue.close();
      await context.dispatcher.close();
      if (redisDown) redis.disconnect();
      else
        await redis.quit().catch(() => {
          redis.disconnect();
        });
    },
  };
}
