import type { Delivery } from '../provider-spec/delivery.js';
import { firstChars } from '../util/first-chars.js';

export interface DeliveryJobData {
  /**
   * The body as the provider sent it (its UTF-8 text); the worker parses it and checks it
   * against the event's schema. Not a re-serialised object, which can be several times the
   * body (1e20 is written as 21 digits), in a Redis that refuses every delivery once it is full.
   * Absent once the job is handled (`handled`).
   */
  readonly body?: string;
  /** The parsed delivery, as versions before `body` queued it: still read, never written. */
  readonly event?: Delivery;
  /** When this receiver accepted the delivery, ISO 8601 (a replay keeps the original's). */
  readonly receivedAt: string;
  /**
   * The delivery's W3C trace context (telemetry/trace-context.ts), 55 characters: its forwards
   * carry its trace id. Absent on a job of an earlier version's, and once the job is handled.
   */
  readonly traceparent?: string;
  /**
   * Set, in place of `body`, once the job's handling, forwarding and archiving are done: a
   * completed job is kept a day for the dashboard, and what it keeps is this summary, not the
   * payload (the archive has that). A job run again after this (its worker died before BullMQ
   * marked it completed) has nothing left to do.
   */
  readonly handled?: HandledSummary;
  /**
   * Set when a run forwarded the message and then failed for its archive write alone: the runs
   * after it do not forward it again (run-delivery.ts).
   */
  readonly forwarded?: true;
  /** Set on a job `replay` made (archive/replay.ts): never archived again. */
  readonly replay?: {
    /** The job that first handled the delivery. */
    readonly of: string;
    /** When the replay was asked for, ISO 8601. */
    readonly at: string;
  };
}

/** What a handled job keeps: at most about 300 bytes, whatever the body (handledSummary). */
export interface HandledSummary {
  readonly event: string;
  /** data.id, cut to its first 200 characters (an id may be as long as the body). */
  readonly id: string;
  readonly at: string;
}

/** The job data the receiver queues for a body it accepted. */
export function deliveryJobData(
  body: string,
  receivedAt: Date,
  traceparent?: string,
): DeliveryJobData {
  return {
    body,
    receivedAt: receivedAt.toISOString(),
    ...(traceparent === undefined ? {} : { traceparent }),
  };
}

/** The delivery a job carries, or undefined for a job already handled. */
export function deliveryOf(data: DeliveryJobData): Delivery | undefined {
  if (data.body !== undefined) return JSON.parse(data.body) as Delivery;
  return data.event;
}

/** How many characters of an id a handled job and log lines show (an id may be 1 MB). */
export const SHOWN_ID_CHARS = 200;

/** The item's data.id (a handled job's summary has its first 200 characters). */
export function jobItemId(data: DeliveryJobData): string | undefined {
  if (data.handled !== undefined) return data.handled.id;
  try {
    const id: unknown = deliveryOf(data)?.data.id;
    return typeof id === 'string' ? id : undefined;
  } catch {
    return undefined; // not JSON: a job from elsewhere than our receiver (dispatch refuses it)
  }
}

/**
 * A payload longer than this must be replaced, once its job has done its work, by a summary
 * (handledData). The worker's `handled` step replaces every payload in the call that writes
 * the step (worker/timeline-steps.ts); should that call fail, the job's own update replaces one
 * longer than this, and a shorter one is cheaper to keep than that extra call
 * (docs/performance-history.md, "Figures behind the code").
 */
export const PAYLOAD_KEPT_BELOW = 512;

/** Whether a job done with `payload` should replace it by a summary before it completes. */
export function payloadTooBigToKeep(payload: string | undefined): boolean {
  return payload !== undefined && payload.length > PAYLOAD_KEPT_BELOW;
}

/** The data a handled job keeps in place of its payload. */
export function handledData(data: DeliveryJobData, delivery: Delivery): DeliveryJobData {
  const { receivedAt, replay } = data;
  return {
    receivedAt,
    ...(replay === undefined ? {} : { replay }),
    handled: {
      event: delivery.event,
      id: firstChars(delivery.data.id, SHOWN_ID_CHARS),
      at: new Date().toISOString(),
    },
  };
}
