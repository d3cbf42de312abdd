/** What a destination received: the message id, its headers' view, and the parsed body. */
export interface Received {
  readonly id: string;
  /** The W3C `traceparent` it carried (an HTTP header, a JetStream or AMQP message header). */
  readonly traceparent?: string;
  /** The HTTP forward's `webhook-signature` header, as sent. */
  readonly signature?: string;
  readonly body: {
    type: string;
    id: string;
    timestamp: string;
    data: Record<string, unknown>;
    stored?: { name: string; bytes: number; sha256: string; content_type: string };
  };
}

/** How long `Inbox.atLeast` waits by default: below Jest's 30 s, so its own message is seen. */
const ARRIVAL_MS = 25_000;

/** Messages arriving, with a wait for the n-th: each destination's consumer feeds one. */
export class Inbox {
  readonly messages: Received[] = [];
  private readonly waiters: { count: number; resolve: () => void }[] = [];

  /** `name`: the destination, for a wait that fails. */
  constructor(private readonly name: string) {}

  push(message: Received): void {
    this.messages.push(message);
    for (const waiter of this.waiters.filter((w) => this.messages.length >= w.count)) {
      this.waiters.splice(this.waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  }

  /**
   * Resolves once `count` messages arrived (repeats included); fails after `timeoutMs`, naming
   * the destination, how many it waited for and which ones it has, rather than leaving Jest to
   * say "Exceeded timeout".
   */
  atLeast(count: number, timeoutMs = ARRIVAL_MS): Promise<void> {
    if (this.messages.length >= count) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const waiter = {
        count,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        const got = this.ids();
        reject(
          new Error(
            `${this.name}: waited ${timeoutMs} ms for ${count} messages, ${got.length} arrived` +
              (got.length > 0 ? ` (the last: ${got.slice(-5).join(', ')})` : ''),
          ),
        );
      }, timeoutMs);
      // A deadline keeps nothing alive: a waiter that lost a race would otherwise hold the
      // Jest worker open until it fires.
      timer.unref();
      this.waiters.push(waiter);
    });
  }

  ids(): string[] {
    return this.messages.map((m) => m.id);
  }
}

/** A `whsec_` secret as FORWARD_SECRET takes it. */
