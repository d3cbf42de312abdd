import type { NeverRetry } from '../../jobs/retry-policy.js';

/** One message on its way: the id every destination carries, the JSON body, its trace. */
export interface Outgoing {
  readonly id: string;
  readonly body: string;
  /**
   * The W3C `traceparent` this send carries (an HTTP header, a JetStream message header, an AMQP
   * message header): the delivery's trace id, the send's own span id.
   */
  readonly traceparent: string;
}

/** Sends to one destination; resolves once it took the message (2xx, PubAck, confirm). */
export interface Sender {
  send(message: Outgoing, signal: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

/** A destination did not take a message; the message says why, without credentials. */
export class ForwardError extends Error {
  override name = 'ForwardError';
  /** How long the destination asked to be left alone (a 429's or 503's Retry-After), in ms. */
  readonly retryAfterMs: number | undefined;

  constructor(message: string, options?: ErrorOptions & { readonly retryAfterMs?: number }) {
    super(message, options);
    this.retryAfterMs = options?.retryAfterMs;
  }
}

/**
 * A refusal that no later attempt can change (a message over the server's maximum size, a
 * destination no longer configured): that destination fails at once, listed by `failures`.
 */
export class PermanentForwardError extends ForwardError implements NeverRetry {
  override name = 'PermanentForwardError';
  readonly neverRetry = true;
}
