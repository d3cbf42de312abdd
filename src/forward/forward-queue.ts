import { Queue, type ConnectionOptions } from 'bullmq';
import type { Destination } from './destinations.js';
import { dedupeId } from '../queue/enqueue-delivery.js';
import type { ForwardMessage } from './forward-message.js';

/** Forwarding's own queue: one job per handled delivery, for every destination. */
export const FORWARD_QUEUE = 'forwards';

export interface ForwardJobData {
  /**
   * The destinations still to send to, by name without credentials (destinations.ts): every
   * destination at first; after an attempt, those that did not take the message. A retry sends
   * to these only.
   */
  readonly destinations: readonly string[];
  /** Why each of `destinations` did not take it on the last attempt, by name. */
  readonly reasons?: Readonly<Record<string, string>>;
  /** `<event>:<data.id>`: the id every destination carries, for consumers to dedupe on. */
  readonly messageId: string;
  /** The message as sent, JSON: a retry sends these very bytes, nothing is fetched again. */
  readonly body: string;
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
    },
  });
}

/**
 * Puts the message on the forward queue, for every destination, in one job: one job's Redis
 * round trips per item instead of one per destination (the bench measured 2.5 ms of worker CPU
 * per item with a job per destination and three destinations). The job's id follows from the
 * delivery job: a delivery job run twice (its worker killed after this) adds nothing the second
 * time while the first is kept. A replay is a new delivery job, so it forwards again, with the
 * same message id.
 */
export async function enqueueForwards(
  queue: ForwardQueue,
  destinations: readonly Destination[],
  deliveryJobId: string,
  message: ForwardMessage,
): Promise<void> {
  const data: ForwardJobData = {
    destinations: destinations.map((destination) => destination.name),
    // The receiver's dedupe id: the same for every run of one item (a retry, a replay), so a
    // JetStream stream or a consumer's table drops the repeats as the receiver does.
    messageId: dedupeId(message.type, message.id),
    body: JSON.stringify(message),
  };
  await queue.add(message.type, data, { jobId: forwardJobId(deliveryJobId) });
}

/** Apart from the delivery job's own id, which `retry <jobId>` also looks up. */
export function forwardJobId(deliveryJobId: string): string {
  return `${deliveryJobId}.forward`;
}
