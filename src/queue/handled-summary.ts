import type { Delivery } from '../provider-spec/delivery.js';
import { firstChars } from '../util/first-chars.js';
import { SHOWN_ID_CHARS, type DeliveryJobData } from './delivery-job-data.js';

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
