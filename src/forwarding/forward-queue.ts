import { Queue, type ConnectionOptions, type Job } from 'bullmq';

/**
 * Forwarding's own queue: one job per handled delivery whose message a destination did not take
 * at once (forward-at-once.ts), for every such destination.
 */
export const FORWARD_QUEUE = 'forwards';

export interface ForwardJobData {
  /**
   * The destinations still to send to, by name without credentials (settings/destinations.ts):
   * those that did not take the message from the delivery job, then after each attempt those that
   * did not take it then. A retry sends to these only.
   */
  readonly destinations: readonly string[];
  /** Why each of `destinations` did not take it on the last attempt, by name. */
  readonly reasons?: Readonly<Record<string, string>>;
  /**
   * Those of `destinations` given up, with why (a refusal for good, its attempts run out, held
   * past FORWARD_HOLD_SECONDS): not tried again while the others are; cleared when the job
   * fails, so `retry` tries them too.
   */
  readonly refused?: Readonly<Record<string, string>>;
  /** Failed attempts so far, by destination (each has its own `attempts`). */
  readonly tries?: Readonly<Record<string, number>>;
  /** Once failed for good: the attempts each destination had made (`failures` shows them). */
  readonly attempted?: Readonly<Record<string, number>>;
  /**
   * When each of `destinations` that failed or was deferred may be tried again (ms since the
   * epoch), by name: the job may run sooner for another (none: whenever the job runs).
   */
  readonly due?: Readonly<Record<string, number>>;
  /** When the message was first held for a paused destination (ms since the epoch), by name. */
  readonly heldSince?: Readonly<Record<string, number>>;
  /** The id every destination carries, for consumers to dedupe on (message-id.ts). */
  readonly messageId: string;
  /** The message as sent, JSON: a retry sends these very bytes, nothing is fetched again. */
  readonly body: string;
  /**
   * The delivery's W3C trace context (telemetry/trace-context.ts): every retry is sent in its
   * trace. Absent on a job of an earlier version's, which is sent in a trace of its own.
   */
  readonly traceparent?: string;
}

export type ForwardQueue = Queue<ForwardJobData>;

/** Attempts a forward job may have at the most; FORWARD_ATTEMPTS is applied by the worker. */
export const FORWARD_ATTEMPTS_CEILING = 100;

export function createForwardQueue(connection: ConnectionOptions, prefix: string): ForwardQueue {
  return new Queue<ForwardJobData>(FORWARD_QUEUE, {
    connection,
    prefix,
    defaultJobOptions: {
      attempts: FORWARD_ATTEMPTS_CEILING,
      backoff: { type: 'forward-delay' },
      // The reason is the job's failedReason and data.reasons; BullMQ would also keep a stack
      // per attempt (about 700 bytes each, the whole job again for a small message).
      stackTraceLimit: 0,
    },
  });
}

/** Apart from the delivery job's own id, which `retry <jobId>` also looks up. */
export function forwardJobId(deliveryJobId: string): string {
  return `${deliveryJobId}.forward`;
}

const FRESH_ATTEMPTS = { resetAttemptsMade: true, resetAttemptsStarted: true } as const;

/**
 * A failed job of either queue back on the queue with fresh attempts (`retry`, the inspector's
 * retry), and a forward's state per destination cleared: one that failed for its stalls still
 * names those given up, and each is tried again. (BullMQ keeps a job's count of stalls, `stc`,
 * through a retry, and offers no call to reset it.)
 */
export async function retryAfresh(job: Job): Promise<void> {
  const { refused, tries, due, heldSince, ...rest } = job.data as Partial<ForwardJobData>;
  if (refused ?? tries ?? due ?? heldSince) await job.updateData(rest);
  await job.retry('failed', FRESH_ATTEMPTS);
}
