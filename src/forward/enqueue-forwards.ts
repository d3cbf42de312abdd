import type { Destination } from '../config/destinations.js';
import { forwardJobId, type ForwardJobData, type ForwardQueue } from '../queue/forward-queue.js';
import type { ForwardMessage } from './forward-message.js';
import { messageId } from './message-id.js';

/**
 * Puts the message on the forward queue, for every destination whose filter it matches (one
 * without a filter takes every message), in one job; a message no destination wants makes none: one job's Redis
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
  const wanting = destinations.filter((d) => d.filter?.matches(message.fields) ?? true);
  if (wanting.length === 0) return;
  const data: ForwardJobData = {
    destinations: wanting.map((destination) => destination.name),
    messageId: messageId(message.type, message.id),
    body: message.body,
  };
  await queue.add(message.type, data, { jobId: forwardJobId(deliveryJobId) });
}
