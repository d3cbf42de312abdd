import type { Delivery } from '../provider-spec/delivery.js';

/** One entry of the archive: an accepted delivery and when and by which job it was handled. */
export interface ArchivedDelivery {
  readonly event: string;
  /** The delivery's `data.id`. */
  readonly id: string;
  /** When the receiver accepted it, ISO 8601. */
  readonly received_at: string;
  /** The job that first handled it. */
  readonly job_id: string;
  /** The delivery as accepted: `event` and `data`. */
  readonly delivery: Delivery;
}

/** What `record` is given. */
export interface Accepted {
  readonly delivery: Delivery;
  readonly jobId: string;
  readonly receivedAt: string;
}

/** An accepted delivery's entry; its keys in this order, the order of every line ever written. */
export function archivedDelivery({ delivery, jobId, receivedAt }: Accepted): ArchivedDelivery {
  return {
    event: delivery.event,
    id: delivery.data.id,
    received_at: receivedAt,
    job_id: jobId,
    delivery,
  };
}
