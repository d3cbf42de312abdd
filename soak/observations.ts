/**
 * What the checker is given: plain data, collected after the drain (collect.ts) or written by
 * hand in a test. Nothing here is read from the service's own code: the checker judges the
 * service by what the sandbox, the store, the archive and the destinations show.
 */

/** One delivery the sandbox made (GET /sandbox/deliveries), and how it ended. */
export interface SentDelivery {
  /** The sandbox's delivery id. */
  readonly id: string;
  readonly event: string;
  readonly dataId: string;
  /** `pending`, `delivered` or `exhausted`; anything else cannot be classified. */
  readonly state: string;
  /** The last attempt's answer: `413`, `503`, or the sender's error (a refusal's reason). */
  readonly lastAnswer?: string;
}

/** What one item (an `event` and a `data.id`) should leave behind once it is acknowledged. */
export interface ExpectedItem {
  readonly event: string;
  readonly id: string;
  /** The CDN's SHA-256 of its audio, for an event that stores audio; absent: it stores none. */
  readonly sha256?: string;
  /** The destinations that want its message (FORWARD_CONFIG's filters applied). */
  readonly wants: readonly string[];
  /** A record the CLI lists: `failure` (audio.failed), `revocation` (key.revoked). */
  readonly record?: 'failure' | 'revocation';
}

/** An item in the audio store: its metadata, and the SHA-256 of the bytes under its name. */
export interface StoredEntry {
  readonly event: string;
  readonly id: string;
  /** The metadata's `sha256`. */
  readonly metadataSha256: string;
  /** What the audio under the metadata's name hashes to; absent: no audio under it. */
  readonly contentSha256?: string;
}

export interface ArchivedEntry {
  readonly event: string;
  readonly id: string;
}

/** One message as a destination received it. */
export interface ForwardedMessage {
  /** webhook-id, Nats-Msg-Id or AMQP message-id. */
  readonly messageId: string;
  /** The body's `type` and `id`. */
  readonly type: string;
  readonly id: string;
  /** The body's `stored.sha256`, when it has one. */
  readonly storedSha256?: string;
}

export interface Observations {
  /** Deliveries the harness asked the sandbox for (its answers said how many it made). */
  readonly requested: number;
  readonly sent: readonly SentDelivery[];
  readonly expected: readonly ExpectedItem[];
  readonly store: readonly StoredEntry[];
  readonly archive: readonly ArchivedEntry[];
  /** By destination name: every message it received, repeats included. */
  readonly destinations: Readonly<Record<string, readonly ForwardedMessage[]>>;
  /** The `data.id`s the CLI lists (`failures`, `revoked-keys`); absent: not checked. */
  readonly records?: {
    readonly failures: readonly string[];
    readonly revocations: readonly string[];
  };
}
