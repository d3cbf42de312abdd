import type { AudioMetadata } from '../storage/audio-store.js';
import type { Delivery } from '../webhooks/define-event.js';

/** Where an item that stored audio is, and what it holds: the message's `stored`. */
export interface StoredItem {
  /** The stored name in the audio store (a file under AUDIO_DIR, an object under S3_PREFIX). */
  readonly name: string;
  readonly bytes: number;
  readonly sha256: string;
  readonly content_type: string;
}

/** What every destination receives for one handled delivery (docs/forwarding.md). */
export interface ForwardMessage {
  readonly type: string;
  readonly id: string;
  /** When it was handled, ISO 8601. */
  readonly timestamp: string;
  /** The delivery's `data`, as the provider sent it. */
  readonly data: unknown;
  readonly stored?: StoredItem;
}

/** The message for a delivery handled at `handledAt`; `stored` when its handling stored audio. */
export function forwardMessage(
  delivery: Delivery,
  handledAt: Date,
  stored: AudioMetadata | undefined,
): ForwardMessage {
  return {
    type: delivery.event,
    id: delivery.data.id,
    timestamp: handledAt.toISOString(),
    data: delivery.data,
    ...(stored === undefined
      ? {}
      : {
          stored: {
            name: stored.file,
            bytes: stored.bytes,
            sha256: stored.sha256,
            content_type: stored.content_type,
          },
        }),
  };
}
