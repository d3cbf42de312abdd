import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { RedisSettings } from '../config/redis-settings.js';
import type { StorageSettings } from '../config/storage-settings.js';
import { startForwarding, type ForwardingConfig } from '../forwarding/start-forwarding.js';
import type { RedisConnection } from '../redis/connections.js';
import type { WriteGate } from '../redis/write-gate.js';
import { dispatch } from './dispatch.js';
import type { WorkerContext } from './worker-context.js';
import { startArchiving } from '../archive/archive-deliveries.js';
import type { DeliveryStages } from './run-delivery.js';
import { deliveryTimeline, timelineTtlMs } from '../history/delivery-timeline.js';
import { deliveryKeys } from '../queue/delivery-keys.js';
import { createStepWriter } from './timeline-steps.js';

/** The steps, and how to stop what they started (the archive's sweeps, forwarding's worker). */
export interface RunningStages extends DeliveryStages {
  close(): Promise<void>;
}

/**
 * What the steps read: forwarding's settings, the archive's retention, and what the timeline's
 * records are kept under and for how long (the archive's retention, else the dedupe window).
 */
export type StagesSettings = ForwardingConfig &
  Pick<StorageSettings, 'archiveRetentionHours'> &
  Pick<RedisSettings, 'queuePrefix' | 'queueShards' | 'dedupeTtlSeconds'>;

/**
 * The steps a worker process runs for each delivery (run-delivery.ts): the archive when
 * ARCHIVE_RETENTION_HOURS keeps one and the store has one, the handlers, and forwarding when
 * FORWARD_URLS names destinations.
 */
export function createDeliveryStages(
  config: StagesSettings,
  logger: Logger,
  redis: RedisConnection,
  context: WorkerContext,
  shared: {
    /** Where their metrics are shown (the worker's, and the receiver's with ROLE=all). */
    readonly registries: readonly Registry[];
    /** The worker's: a connection error is reported once, by state. */
    readonly reportError: (error: unknown, msg: string) => void;
    /** The process's: no job is taken while Redis refuses writes. */
    readonly gate?: WriteGate | undefined;
  },
): RunningStages {
  const archiver = startArchiving(config, context.store, logger, shared.registries);
  const timeline = deliveryTimeline(
    redis,
    deliveryKeys(config.queuePrefix, config.queueShards).placeOf,
    timelineTtlMs(config),
  );
  const forwarding = startForwarding(config, logger, redis, { ...shared, timeline });
  return {
    recorder: createStepWriter(timeline, logger, { forwards: forwarding !== undefined }),
    archive: archiver === undefined ? undefined : (job) => archiver.record(job),
    handle: (job) => dispatch(job, context),
    forward:
      forwarding === undefined ? undefined : (jobId, message) => forwarding.forward(jobId, message),
    async close() {
      archiver?.stop();
      await forwarding?.close();
    },
  };
}
