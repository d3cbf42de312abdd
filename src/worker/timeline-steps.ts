import { hostname } from 'node:os';
import type { Job } from 'bullmq';
import type { Logger } from 'pino';
import type { Delivery } from '../provider-spec/delivery.js';
import {
  handledData,
  jobItemId,
  payloadTooBigToKeep,
  type DeliveryJobData,
} from '../queue/delivery-job-data.js';
import { handledJobWrite } from '../queue/delivery-keys.js';
import type {
  DeliveryTimeline,
  EarlierStep,
  Step,
  StepSubject,
} from '../history/delivery-timeline.js';
import type { AudioMetadata } from '../storage/audio-store.js';

/** Which process ran an attempt: what an operator looks for in that host's logs. */
const RUNNER = `${hostname().slice(0, 24)}:${process.pid}`;

/**
 * How long an attempt runs before its `attempt` step is written on its own, putting the delivery
 * in state `active` on the inspector. One that ends sooner sends that step, and `stored` when
 * nothing is forwarded, with the step that ends it: one Redis call per handled delivery instead
 * of three (docs/operations.md, "Read its path").
 */
export const ATTEMPT_NOTED_AFTER_MS = 1_000;

/**
 * The worker's steps of a delivery's timeline (history/delivery-timeline.ts). A step is written
 * without waiting for it and never fails the delivery: a Redis that refuses it (full, away)
 * costs the inspector a line, logged, not the delivery its handling. The one step waited for is
 * `handled`, because it also puts the handled job's summary in place of its payload: the write
 * the job made anyway (queue/delivery-job-data.ts) carries the step, so it costs no round trip.
 * Steps noted while an attempt runs wait for the next step written (each keeps its own time):
 * `attempt` at most `attemptNotedAfterMs`, `stored` when no destination's step follows it.
 */
export interface StepWriter {
  /** A run begins; notes first an attempt whose worker stopped before it ended. */
  started(job: Job<DeliveryJobData>, delivery: Delivery): void;
  /** Its handler ran: what it stored, noted before the message is forwarded. */
  stored(job: Job<DeliveryJobData>, delivery: Delivery, stored: AudioMetadata | undefined): void;
  /** The job's work is done: `handled`, and the job's summary in place of its payload. */
  handled(job: Job<DeliveryJobData>, delivery: Delivery): Promise<void>;
  /** The run ended (returned or threw): what it noted and has not written yet is written now. */
  ended(job: Job<DeliveryJobData>): void;
  /** A run failed (`final`: for good, BullMQ will not run it again). */
  failed(job: Job<DeliveryJobData>, reason: string, final: boolean): void;
}

export interface StepWriterOptions {
  /** Destinations follow `stored` with steps of their own: it is written at once. */
  readonly forwards: boolean;
  /** @defaultValue ATTEMPT_NOTED_AFTER_MS */
  readonly attemptNotedAfterMs?: number;
}

/** A run's steps noted and not yet written, the delivery they are about, and their timer. */
interface Noted {
  readonly subject: StepSubject;
  readonly steps: EarlierStep[];
  readonly timer: NodeJS.Timeout;
}

export function createStepWriter(
  timeline: DeliveryTimeline,
  logger: Logger,
  options: StepWriterOptions,
): StepWriter {
  const unwritten = (error: unknown) => {
    logger.debug({ err: error }, 'a delivery timeline step was not recorded');
  };
  const note = (subject: StepSubject, step: Step) => {
    timeline.write(subject, step).catch(unwritten);
  };
  const subjectOf = (job: Job<DeliveryJobData>, delivery: Delivery): StepSubject => ({
    event: delivery.event,
    id: delivery.data.id,
    receivedAt: Date.parse(job.data.receivedAt),
  });
  // Per run: the Job object runDelivery holds from `started` to `ended`.
  const runs = new Map<Job<DeliveryJobData>, Noted>();
  /** The run's unwritten steps, to go with `step`; the run keeps none after. */
  const withEarlier = (job: Job<DeliveryJobData>, step: Step): Step => {
    const run = runs.get(job);
    if (run === undefined) return step;
    clearTimeout(run.timer);
    runs.delete(job);
    return { state: 'a', attempts: job.attemptsStarted, ...step, earlier: run.steps };
  };
  /** Writes what the run noted, each step at its own time; the timeline's state `active`. */
  const flush = (job: Job<DeliveryJobData>) => {
    const run = runs.get(job);
    if (run !== undefined) note(run.subject, withEarlier(job, {}));
  };
  return {
    started(job, delivery) {
      const subject = subjectOf(job, delivery);
      // BullMQ counts a run as started when it takes the job, and as made when it fails: a run
      // started and neither made nor completed was cut off (its worker killed, its lock lost).
      const cutOff = job.attemptsStarted - 1 - job.attemptsMade;
      const at = Date.now();
      const steps: EarlierStep[] = [];
      if (cutOff > 0) {
        steps.push({
          at,
          code: 'X',
          detail: `attempt ${job.attemptsStarted - 1} never ended: the worker running it stopped (its lock expired; the job was taken over)`,
        });
      }
      steps.push({ at, code: 'A', detail: `${job.attemptsStarted} ${RUNNER}` });
      runs.set(job, {
        subject,
        steps,
        timer: setTimeout(() => {
          flush(job);
        }, options.attemptNotedAfterMs ?? ATTEMPT_NOTED_AFTER_MS).unref(),
      });
      // Taken over from a worker that stopped: shown at once.
      if (cutOff > 0) flush(job);
    },
    stored(job, delivery, stored) {
      if (stored === undefined) return;
      const { file, bytes, sha256, content_type } = stored;
      const detail = JSON.stringify({ key: file, bytes, sha256, content_type });
      const run = runs.get(job);
      if (run !== undefined && !options.forwards)
        run.steps.push({ at: Date.now(), code: 'S', detail });
      else note(subjectOf(job, delivery), withEarlier(job, { code: 'S', detail }));
    },
    async handled(job, delivery) {
      const subject = subjectOf(job, delivery);
      const big = payloadTooBigToKeep(job.data.body);
      const record = handledData(job.data, delivery);
      try {
        await timeline.write(
          subject,
          withEarlier(job, {
            code: 'H',
            state: 'h',
            failedIndex: '-',
            ...(job.data.body === undefined ? {} : { jobData: handledJobWrite(job, record) }),
          }),
        );
        if (job.data.body !== undefined) job.data = record;
      } catch (error: unknown) {
        unwritten(error);
        // A large payload must not stay in the noeviction Redis: the job's own write, which
        // fails the run (retried) if Redis refuses it too.
        if (big) await job.updateData(record);
      }
    },
    ended(job) {
      flush(job);
    },
    failed(job, reason, final) {
      const id = jobItemId(job.data);
      if (id === undefined) return;
      const subject = { event: job.name, id, receivedAt: Date.parse(job.data.receivedAt) };
      // Not final: it waits for its backoff, queued again.
      note(subject, { code: 'X', detail: reason, ...(final ? {} : { state: 'q' as const }) });
      if (final) note(subject, { code: 'F', detail: reason, state: 'f', failedIndex: '+' });
    },
  };
}
