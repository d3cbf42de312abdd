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

/** Messages arriving, with waits for a count of them or for given ids: each destination's consumer feeds one. */
export class Inbox {
  readonly messages: Received[] = [];
  private readonly seen = new Set<string>();
  private readonly waiters: { done: () => boolean; resolve: () => void }[] = [];

  /** `name`: the destination, for a wait that fails. */
  constructor(private readonly name: string) {}

  push(message: Received): void {
    this.messages.push(message);
    this.seen.add(message.id);
    for (const waiter of this.waiters.filter((w) => w.done())) {
      this.waiters.splice(this.waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  }

  /**
   * Resolves once `count` messages arrived (repeats included); fails after `timeoutMs`, naming
   * the destination, how many it waited for and which ones it has, rather than leaving Jest to
   * say "Exceeded timeout". A wait for every one of a set of messages is `holding`: forwarding
   * is at least once, so a repeat may come before the last of them.
   */
  atLeast(count: number, timeoutMs = ARRIVAL_MS): Promise<void> {
    return this.until(() => this.messages.length >= count, `${count} messages`, timeoutMs);
  }

  /** Resolves once a message of every id in `ids` arrived, whatever the repeats; as `atLeast`. */
  holding(ids: Iterable<string>, timeoutMs = ARRIVAL_MS): Promise<void> {
    const wanted = [...new Set(ids)];
    const missing = () => wanted.filter((id) => !this.seen.has(id));
    return this.until(
      () => missing().length === 0,
      `${wanted.length} distinct ids`,
      timeoutMs,
      () => ` (${missing().length} missing, e.g. ${missing().slice(0, 3).join(', ')})`,
    );
  }

  ids(): string[] {
    return this.messages.map((m) => m.id);
  }

  private until(
    done: () => boolean,
    what: string,
    timeoutMs: number,
    more: () => string = () => '',
  ): Promise<void> {
    if (done()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const waiter = {
        done,
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
            `${this.name}: waited ${timeoutMs} ms for ${what}, ${got.length} messages arrived` +
              (got.length > 0 ? ` (the last: ${got.slice(-5).join(', ')})` : '') +
              more(),
          ),
        );
      }, timeoutMs);
      // A deadline keeps nothing alive: a waiter that lost a race would otherwise hold the
      // Jest worker open until it fires.
      timer.unref();
      this.waiters.push(waiter);
    });
  }
}

/** A `whsec_` secret as FORWARD_SECRET takes it. */
