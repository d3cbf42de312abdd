import { UnrecoverableError, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { createGuardedAgent } from '../download/guarded-agent.js';
import { DELIVERY_QUEUE, type DeliveryJobData } from '../queue/delivery-queue.js';
import { workerRedisOptions } from '../queue/redis-connections.js';
import { watchRedis } from '../queue/watch-redis.js';
import { createFailureLog } from '../records/failure-log.js';
import { createRevocationRegistry } from '../records/revocation-registry.js';
import type { AudioStore } from '../storage/audio-store.js';
import { createLocalAudioStore } from '../storage/local-audio-store.js';
import { webhookEventSchema } from '../webhooks/events.js';
import { dispatch } from './dispatch.js';
import { defaultHooks, type Hooks } from './hooks.js';
import { retryDelay } from './retry-delay.js';

export interface WorkerOptions {
  readonly hooks?: Hooks;
  /** Defaults to the local filesystem under AUDIO_DIR. */
  readonly store?: AudioStore;
  /** Extra CA certificates the downloader trusts (PEM); NODE_EXTRA_CA_CERTS works too. */
  readonly ca?: string;
}

export interface RunningWorkers {
  readonly worker: Worker<DeliveryJobData>;
  /** Stops taking jobs, waits for the active ones, closes connections. */
  close(): Promise<void>;
}

const SECOND = 1000;

/**
 * Completed jobs are kept a day (the audio is on disk); failed ones for inspection and replay.
 * Set here rather than on each job, so the receiver's hot path does not carry them.
 */
const KEEP_COMPLETED = { age: 24 * 3600, count: 10_000 } as const;
const KEEP_FAILED = { count: 50_000 } as const;

export async function startWorkers(
  config: Config,
  logger: Logger,
  options: WorkerOptions = {},
): Promise<RunningWorkers> {
  const store = options.store ?? (await createLocalAudioStore(config.audioDir));
  const removed = await store.removeStaleTemps();
  if (removed.length > 0)
    logger.warn({ removed }, 'removed partial downloads left by a killed process');
  if (config.cdnOrigins.length === 0)
    logger.warn('CDN_URL is empty: every audio.ready download will be refused');

  const redis = new Redis(config.redisUrl, { maxRetriesPerRequest: null });
  watchRedis(redis, logger, 'worker');
  const timeout = config.downloadTimeoutMs;
  const dispatcher = createGuardedAgent({
    allowPrivateIps: config.downloadAllowPrivateIps,
    ...(options.ca === undefined ? {} : { ca: options.ca }),
    connectTimeoutMs: Math.min(10 * SECOND, timeout),
    headersTimeoutMs: Math.min(30 * SECOND, timeout),
    bodyIdleTimeoutMs: Math.min(30 * SECOND, timeout),
  });
  const context = {
    config,
    logger,
    store,
    dispatcher,
    revocations: createRevocationRegistry(redis, config.queuePrefix),
    failures: createFailureLog(redis, config.queuePrefix),
    hooks: options.hooks ?? defaultHooks,
  };

  const worker = new Worker<DeliveryJobData>(
    DELIVERY_QUEUE,
    async (job) => {
      // Jobs normally come from our receiver, but a queue is an open door: check again.
      const parsed = webhookEventSchema.safeParse(job.data.event);
      if (!parsed.success)
        throw new UnrecoverableError(`job data is not a valid event: ${parsed.error.message}`);
      return dispatch(parsed.data, context, { id: job.id ?? '', receivedAt: job.data.receivedAt });
    },
    {
      connection: workerRedisOptions(config.redisUrl),
      prefix: config.queuePrefix,
      concurrency: config.workerConcurrency,
      lockDuration: config.workerLockMs,
      stalledInterval: config.workerLockMs,
      // A job whose worker died is run again; twice in a row means it is what kills workers.
      maxStalledCount: 2,
      removeOnComplete: KEEP_COMPLETED,
      removeOnFail: KEEP_FAILED,
      settings: {
        backoffStrategy: (attemptsMade, _type, error) =>
          retryDelay(attemptsMade, config.downloadBackoffMs, error),
      },
    },
  );
  worker.on('failed', (job, error) => {
    // BullMQ sets finishedOn when the job moved to failed for good (a retry resets it to null).
    const final = job === undefined || Boolean(job.finishedOn);
    logger[final ? 'error' : 'warn'](
      { jobId: job?.id, event: job?.name, attemptsMade: job?.attemptsMade, reason: error.message },
      final ? 'job failed; kept for inspection (audio-webhooks failed)' : 'job failed; will retry',
    );
  });
  worker.on('error', (error) => {
    logger.error({ err: error }, 'worker error');
  });
  logger.info({ concurrency: config.workerConcurrency }, 'workers started');

  return {
    worker,
    async close() {
      await worker.close();
      await dispatcher.close();
      await redis.quit();
    },
  };
}
