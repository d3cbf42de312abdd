import type { FilterableMessage } from './settings/message-filter.js';
import type { AudioMetadata } from '../storage/audio-store.js';
import type { Delivery } from '../provider-spec/delivery.js';
import { jsonMember } from '../provider-spec/json-member.js';
import {
  formatTraceparent,
  newTraceContext,
  parseTraceparent,
} from '../telemetry/trace-context.js';
import { activeTrace } from '../telemetry/tracing.js';

/** Where an item that stored audio is, and what it holds: the message's `stored`. */
export interface StoredItem {
  /** The stored name in the audio store (a file under AUDIO_DIR, an object under S3_PREFIX). */
  readonly name: string;
  readonly bytes: number;
  readonly sha256: string;
  readonly content_type: string;
}

/**
 * What every destination receives for one handled delivery (docs/forwarding.md): `body` is the
 * JSON `{type, id, timestamp, data, stored?}`; `type` and `id` say which item it is.
 */
export interface ForwardMessage {
  readonly type: string;
  /** data.id, as sent. */
  readonly id: string;
  readonly body: string;
  /** The delivery's W3C trace context, which every destination is sent (telemetry/trace-context.ts). */
  readonly traceparent: string;
  /** What a destination's filter is matched against: the body's fields, parsed. */
  readonly fields: FilterableMessage;
}

/**
 * The message for a delivery handled at `handledAt`, `stored` when its handling stored audio.
 * `data` is the text the provider sent (`sent`, the delivery's body), not a re-serialised copy.
 * `traceparent` is the one its job carries; a job without one (queued by an earlier version, or
 * by `replay`) is forwarded in the trace of its job's span when tracing is on, else a new one.
 */
export function forwardMessage(
  delivery: Delivery,
  sent: string | undefined,
  handledAt: Date,
  stored: AudioMetadata | undefined,
  traceparent: string | undefined,
): ForwardMessage {
  const data =
    (sent === undefined ? undefined : jsonMember(sent, 'data')) ?? JSON.stringify(delivery.data);
  const item: StoredItem | undefined =
    stored === undefined
      ? undefined
      : {
          name: stored.file,
          bytes: stored.bytes,
          sha256: stored.sha256,
          content_type: stored.content_type,
        };
  const timestamp = handledAt.toISOString();
  const body = `{"type":${JSON.stringify(delivery.event)},"id":${JSON.stringify(delivery.data.id)},"timestamp":${JSON.stringify(timestamp)},"data":${data}${item === undefined ? '' : `,"stored":${JSON.stringify(item)}`}}`;
  const fields: FilterableMessage = {
    type: delivery.event,
    id: delivery.data.id,
    timestamp,
    data: delivery.data,
    ...(item === undefined ? {} : { stored: item }),
  };
  const trace = parseTraceparent(traceparent) ?? activeTrace() ?? newTraceContext();
  return {
    type: delivery.event,
    id: delivery.data.id,
    body,
    traceparent: formatTraceparent(trace),
    fields,
  };
}
