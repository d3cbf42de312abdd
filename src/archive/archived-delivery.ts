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

/** Which archived deliveries a query wants. Every field narrows; none: all of them. */
export interface ArchiveQuery {
  /** Received at or after. */
  readonly since?: Date;
  /** Received at or before. */
  readonly until?: Date;
  /** Only these `data.id`s. */
  readonly ids?: readonly string[];
  /** Only this event. */
  readonly event?: string;
}

/** A query's time range in epoch ms, open ends as infinities. */
export function queryRange(query: ArchiveQuery): { since: number; until: number } {
  return {
    since: query.since?.getTime() ?? -Infinity,
    until: query.until?.getTime() ?? Infinity,
  };
}
