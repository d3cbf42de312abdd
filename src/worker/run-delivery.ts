import type { Job, Worker } from 'bullmq';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { RedisSettings } from '../config/redis-settings.js';
import type { StorageSettings } from '../config/storage-settings.js';
import { startForwarding, type ForwardingConfig } from '../forwarding/start-forwarding.js';
import type { RedisConnection } from '../redis/connections.js';
import type { WriteGate } from '../redis/write-gate.js';
import { startArchiving } from '../archive/archive.js';
import { deliveryTimeline, timelineTtlMs } from '../history/delivery-timeline.js';
import { deliveryKeys } from '../queue/delivery-keys.js';
import type { Delivery } from '../provider-spec/delivery.js';
import type { BatchedLine } from '../archive/archive.js';
import type { ForwardMessage } from '../forwarding/forward-message.js';
import { forwardMessage } from '../forwarding/forward-message.js';
import {
  deliveryOf,
  handledData,
  jobItemId,
  payloadTooBigToKeep,
  SHOWN_ID_CHARS,
  type DeliveryJobData,
} from '../queue/delivery-job-data.js';
import { firstChars } from '../util/first-chars.js';
import { createStepWriter, type StepWriter } from './timeline-steps.js';
import { jsonMember } from '../provider-spec/json-member.js';
import {
  deliveryView,
  dispatch,
  type DeliveryJob,
  type Handled,
  type WorkerContext,
} from './dispatch.js';

/** The stages after a delivery is taken, in the order runDelivery runs them. */
export interface DeliveryStages {
  /**
   * Starts archiving it for replay while it is handled; `written()`, called once the job waits
   * for it, rejects when it could not be archived (the job is retried). Undefined: the archive
   * is off.
   */
  readonly archive: ((job: DeliveryJob) => BatchedLine) | undefined;
  /** Runs its handler (dispatch): what the handler returned, and the item it stored. */
  readonly handle: (job: DeliveryJob) => Promise<Handled>;
  /**
   * Sends the message to its destinations, at once where it can, else by the forward queue.
   * Undefined: FORWARD_URLS names no destination.
   */
  readonly forward: ((jobId: string, message: ForwardMessage) => Promise<void>) | undefined;
  /** Notes each step in the delivery's timeline, for the inspector. Undefined: none kept. */
  readonly timeline?: StepWriter | undefined;
}

/** The stages, and how to stop what they started (the archive's sweeps, forwarding's worker). */
export interface RunningStages extends DeliveryStages {
  close(): Promise<void>;
}

/**
 * What the stages read: forwarding's settings, the archive's retention, and what the timelines are
 * kept under and for how long (the archive's retention, else the dedupe window).
 */
export type StagesSettings = ForwardingConfig &
  Pick<StorageSettings, 'archiveRetentionHours'> &
  Pick<RedisSettings, 'queuePrefix' | 'queueShards' | 'dedupeTtlSeconds'>;

/**
 * The stages a worker process runs for each delivery (runDelivery, below): the archive when
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
    timeline: createStepWriter(timeline, logger, { forwards: forwarding !== undefined }),
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

/**
 * One delivery job, top to bottom: archive (alongside), handle, forward what handling stored,
 * then keep a summary of the job in place of its payload. A job that throws is retried by
 * BullMQ and runs these stages again: a download finds its audio stored, a forward job that
 * exists is not added twice.
 */
export async function runDelivery(
  job: Job<DeliveryJobData>,
  stages: DeliveryStages,
): Promise<unknown> {
  const delivery = deliveryOf(job.data);
  // Handled already: its worker died after the last step below, before BullMQ marked it.
  if (delivery === undefined) return undefined;
  const dataText = job.data.body === undefined ? undefined : jsonMember(job.data.body, 'data');
  const taken = deliveryView(delivery, {
    jobId: job.id ?? '',
    receivedAt: job.data.receivedAt,
    dataText,
    attempt: job.attemptsMade + 1,
    // A job taken over after its worker died keeps attemptsMade; attemptsStarted counts it.
    firstRun: job.attemptsStarted <= 1 && job.data.replay === undefined,
    replay: job.data.replay !== undefined,
  });
  stages.timeline?.started(job, delivery);
  try {
    return await runStages(job, delivery, taken, stages);
  } finally {
    stages.timeline?.ended(job);
  }
}

async function runStages(
  job: Job<DeliveryJobData>,
  delivery: Delivery,
  taken: DeliveryJob,
  stages: DeliveryStages,
): Promise<unknown> {
  // Archived while it is handled, not before: the archive never delays a delivery. The job ends
  // only once its archive write has ended; one that failed fails the job after its handling and
  // forwarding, and the retry finds both done: the audio stored, and `forwarded` set, so that a
  // destination is not sent the message again for the archive's sake. Its failure is kept as a
  // value, and waited for only once the job has nothing else to do: its batch need not linger
  // for others from then on.
  const archiving = stages.archive?.(taken);
  const archived = () =>
    archiving?.written().then(
      () => undefined,
      (error: unknown) => (error instanceof Error ? error : new Error(String(error))),
    );
  let handled: Handled;
  try {
    handled = await stages.handle(taken);
    stages.timeline?.stored(job, delivery, handled.stored);
    // A worker killed before the message is sent or queued leaves the job to run again, which
    // finds the audio stored (no download) and forwards then.
    if (job.data.forwarded !== true) {
      await stages.forward?.(
        taken.jobId,
        forwardMessage(delivery, job.data.body, new Date(), handled.stored, job.data.traceparent),
      );
    }
  } catch (error: unknown) {
    // The handling's failure is the one to report; the archive's is retried with it.
    await archived();
    throw error;
  }
  const notArchived = await archived();
  if (notArchived !== undefined) {
    if (stages.forward !== undefined && job.data.forwarded !== true) {
      await job.updateData({ ...job.data, forwarded: true });
    }
    throw notArchived;
  }
  // Last: the completed job keeps a summary, not the payload (the archive holds it, and the
  // forward job when there is one): a kept payload costs the noeviction Redis many times its size.
  // With a timeline, its `handled` step writes the summary (timeline-steps.ts), whatever the size.
  if (stages.timeline !== undefined) await stages.timeline.handled(job, delivery);
  else if (payloadTooBigToKeep(job.data.body))
    await job.updateData(handledData(job.data, delivery));
  return handled.result;
}

/** The BullMQ worker that runs delivery jobs. */
export type DeliveryWorker = Worker<DeliveryJobData>;

/** What a "job failed" line says of a delivery job: the item, not only the job. */
export function describeDeliveryJob(job: Job<DeliveryJobData>): Record<string, unknown> {
  return { id: firstChars(jobItemId(job.data) ?? '', SHOWN_ID_CHARS) };
}
