/** A Redis (or store) call did not settle in time; what it was waiting on is in the message. */
export class DeadlineError extends Error {
  constructor(
    readonly what: string,
    readonly ms: number,
  ) {
    super(`${what} did not answer within ${ms} ms`);
    this.name = 'DeadlineError';
  }
}

/**
 * `work`, or a DeadlineError once `ms` have passed. BullMQ's reads wait for a connection that
 * may never come (a Queue made while Redis was down waits for its first `ready` for good: a
 * scrape hung 629 s), so every read outside the webhook route goes through this. A late
 * settlement of `work` is ignored, never left unhandled.
 */
export function withDeadline<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      reject(new DeadlineError(what, ms));
    }, ms);
  });
  work.catch(() => undefined);
  return Promise.race([work, deadline]).finally(() => {
    clearTimeout(timer);
  });
}
