/** A call did not settle in time; what it was waiting on is in the message. */
export class DeadlineError extends Error {
  override name = 'DeadlineError';
  constructor(
    readonly what: string,
    readonly ms: number | undefined,
  ) {
    super(
      ms === undefined ? `${what}: no answer in time` : `${what} did not answer within ${ms} ms`,
    );
  }
}

/**
 * THE timeout helper: `work`, or a DeadlineError once `deadline` (ms from now, or a signal that
 * aborts, such as one attempt's timeoutSignal shared by its steps) has passed. BullMQ's
 * reads wait for a connection that may never come (a Queue made while Redis was down waits for
 * its first `ready` for good), so every read outside the webhook route goes
 * through this. A late settlement of `work` is ignored, never left unhandled.
 */
export function withDeadline<T>(
  work: Promise<T>,
  deadline: number | AbortSignal,
  what: string,
): Promise<T> {
  work.catch(() => undefined);
  const ms = typeof deadline === 'number' ? deadline : undefined;
  return new Promise<T>((resolve, reject) => {
    const expire = () => {
      reject(new DeadlineError(what, ms));
    };
    // A time: a plain timer, which keeps the process alive until it fires or is cleared (as
    // timeoutSignal's does). An AbortController and its listener for it are a measurable share of
    // a receiver's CPU, where every delivery's store is bounded (docs/performance-history.md).
    let disarm: () => void;
    if (typeof deadline === 'number') {
      const timer = setTimeout(expire, deadline);
      disarm = () => {
        clearTimeout(timer);
      };
    } else {
      if (deadline.aborted) expire();
      deadline.addEventListener('abort', expire, { once: true });
      disarm = () => {
        deadline.removeEventListener('abort', expire);
      };
    }
    work.then(resolve, reject).finally(disarm);
  });
}

/** A signal that aborts after a time, and the call that ends its timer. */
export interface TimeoutSignal {
  readonly signal: AbortSignal;
  /** Ends the timer; the signal then never aborts. Call it once the work it bounds has ended. */
  readonly clear: () => void;
}

/**
 * AbortSignal.timeout(ms) with a timer that ends with the work: AbortSignal.timeout's fires
 * whenever its span ends, long after the work, and builds a DOMException with a stack each
 * time, a cost paid per send (docs/performance-history.md, "Figures behind the code"). Its reason is the same
 * `TimeoutError` DOMException, so what reads a timeout from the signal reads this one too.
 */
export function timeoutSignal(ms: number): TimeoutSignal {
  const controller = new AbortController();
  const timer = setTimeout(() => {
    controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
  }, ms);
  // Unlike AbortSignal.timeout's, it keeps the process alive until it fires or is cleared: a
  // CLI call waiting on a Redis that never answers must end with its DeadlineError, not exit
  // silently with nothing left to wait for. Cleared with the work, it never outlives it.
  return {
    signal: controller.signal,
    clear: () => {
      clearTimeout(timer);
    },
  };
}
