import { createHash } from 'node:crypto';
import { Queue, type ConnectionOptions } from 'bullmq';
import type { Destination } from './destinations.js';
import { forwardMessageId, type ForwardMessage } from './forward-message.js';

/** Forwarding's own queue: one job per message and destination, retried on its own. */
export const FORWARD_QUEUE = 'forwards';

export interface ForwardJobData {
  /** The destination's name, without credentials (destinations.ts): which one to send to. */
  readonly destination: string;
  /** `<event>:<data.id>`: the id every destination carries, for consumers to dedupe on. */
  readonly messageId: string;
  /** The message as sent, JSON: a retry sends these very bytes, nothing is fetched again. */
  readonly body: string;
  /** The delivery job whose handling it reports. */
  readonly deliveryJobId: string;
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
 * Puts one job per destination on the forward queue, in one round trip. Each job's id follows
 * from the delivery job and the destination: a delivery job run twice (its worker killed after
 * this) adds nothing the second time while the first jobs are kept. A replay is a new delivery
 * job, so it forwards again, with the same message id.
 */
export async function enqueueForwards(
  queue: ForwardQueue,
  destinations: readonly Destination[],
  deliveryJobId: string,
  message: ForwardMessage,
): Promise<void> {
  const body = JSON.stringify(message);
  const messageId = forwardMessageId(message.type, message.id);
  await queue.addBulk(
    destinations.map((destination) => ({
      name: message.type,
      data: { destination: destination.name, messageId, body, deliveryJobId },
      opts: { jobId: forwardJobId(deliveryJobId, destination) },
    })),
  );
}

/** `<delivery job id>.<8 hex of the destination's name>`: BullMQ refuses `:` in a custom id. */
export function forwardJobId(deliveryJobId: string, destination: Destination): string {
  const tag = createHash('sha256').update(destination.name).digest('hex').slice(0, 8);
  return `${deliveryJobId}.${tag}`;
}
