import { ownValue } from '../util/own-value.js';
import type { Counter } from 'prom-client';
import { retryDelay } from '../jobs/retry-policy.js';
import type { ForwardJobData } from './forward-queue.js';
import type { AttemptDeps, Outcome } from './attempt-destination.js';
import type { DeliveryTimeline } from '../history/delivery-timeline.js';

export interface SendForwardDeps extends AttemptDeps {
  /** FORWARD_BACKOFF_MS: the first retry's delay, doubled per attempt. */
  readonly backoffMs: number;
  /** The longest delay between two attempts. */
  readonly maxDelayMs: number;
  /** FORWARD_HOLD_SECONDS, in ms: held longer, a message fails as if its attempts ran out. */
  readonly holdMs: number;
  readonly forwards: Counter<'destination' | 'result'>;
  /** Where each destination's part is noted for the inspector (forward-steps.ts). */
  readonly timeline?: DeliveryTimeline | undefined;
}

/** A held job wakes this often to look again (a promotion lost with a crashed process). */
export const HELD_RECHECK_MS = 15 * 60 * 1000;

/** Per destination: failed attempts, and when it was first held. */
export interface Progress {
  readonly tries: Map<string, number>;
  readonly heldSince: Map<string, number>;
}

/** What one attempt at a job's destinations leaves to do. */
export interface Settled {
  /** Due again (at `dueAt` the earliest). */
  readonly waiting: readonly string[];
  readonly dueAt: number;
  /** When each waiting one that failed or was deferred may be tried again (ms since the epoch). */
  readonly due: ReadonlyMap<string, number>;
  /** Given up, with why: those of earlier attempts, and now. */
  readonly givenUp: Readonly<Record<string, string>>;
  /** Why each waiting one failed last. */
  readonly reasons: ReadonlyMap<string, string>;
  readonly progress: Progress;
  /** Held before and not held now: they leave the destination's held set. */
  readonly heldDone: readonly string[];
}

/**
 * Each outcome of an attempt at `tried` (counted in `webhook_forwards_total`), for the job;
 * `resting`: pending destinations not tried this time (not due yet, or not tried at all), which
 * keep their due time (none: due now).
 */
export function settleAttempts(
  tried: readonly string[],
  outcomes: readonly Outcome[],
  before: Pick<ForwardJobData, 'refused' | 'tries' | 'heldSince' | 'reasons' | 'due'>,
  deps: SendForwardDeps,
  resting: readonly string[] = [],
): Settled {
  const now = Date.now();
  const progress: Progress = {
    tries: new Map(Object.entries(before.tries ?? {})),
    heldSince: new Map(Object.entries(before.heldSince ?? {})),
  };
  // Keyed by destination names, which may be any an operator chose (`__proto__` included):
  // an object with no prototype holds each as its own key.
  const givenUp: Record<string, string> = Object.assign(
    Object.create(null) as Record<string, string>,
    before.refused,
  );
  const reasons = new Map(Object.entries(before.reasons ?? {}));
  const waiting: string[] = [];
  const heldDone: string[] = [];
  const due = new Map<string, number>();
  let dueAt = Infinity;
  for (const name of resting) {
    const at = ownValue(before.due, name);
    waiting.push(name);
    if (at !== undefined) due.set(name, at);
    dueAt = Math.min(dueAt, at ?? now);
  }
  tried.forEach((name, index) => {
    const wasHeld = progress.heldSince.has(name);
    const step = settle(name, outcomes[index] ?? { kind: 'sent' }, now, progress, deps);
    if (wasHeld && step.kind !== 'due') heldDone.push(name);
    if (step.kind === 'sent') reasons.delete(name);
    else if (step.kind === 'given-up') givenUp[name] = step.reason;
    else {
      if (step.reason !== undefined) reasons.set(name, step.reason);
      // A held one is tried whenever its job runs: a promotion after a resume runs it early.
      if (outcomes[index]?.kind !== 'held') due.set(name, step.at);
      waiting.push(name);
      dueAt = Math.min(dueAt, step.at);
    }
  });
  return { waiting, dueAt, due, givenUp, reasons, progress, heldDone };
}

/** A job's data while some destinations wait: those first, then those given up. */
export function pendingData(
  data: Pick<ForwardJobData, 'messageId' | 'body' | 'traceparent'>,
  { waiting, givenUp, reasons, progress, due }: Omit<Settled, 'dueAt' | 'heldDone'>,
): ForwardJobData {
  return {
    messageId: data.messageId,
    body: data.body,
    ...(data.traceparent === undefined ? {} : { traceparent: data.traceparent }),
    destinations: [...waiting, ...Object.keys(givenUp)],
    reasons: Object.fromEntries(reasons),
    refused: givenUp,
    tries: Object.fromEntries(progress.tries),
    heldSince: Object.fromEntries(progress.heldSince),
    due: Object.fromEntries(due),
  };
}

/** One warn line for the destinations whose attempt failed and that will be tried again. */
export function logFailures(
  tried: readonly string[],
  outcomes: readonly Outcome[],
  about: Record<string, unknown>,
  deps: Pick<SendForwardDeps, 'logger'>,
): void {
  const failures = Object.fromEntries(
    tried.flatMap((name, index) => {
      const outcome = outcomes[index];
      return outcome?.kind === 'failed' ? [[name, outcome.error.message]] : [];
    }),
  );
  if (Object.keys(failures).length > 0) {
    deps.logger.warn({ ...about, reasons: failures }, 'forward failed; will retry');
  }
}

/** What one destination's outcome means for the job. */
type Step =
  | { readonly kind: 'sent' }
  | { readonly kind: 'given-up'; readonly reason: string }
  /** Due again at `at`; `reason`: why the last attempt failed, when one did. */
  | { readonly kind: 'due'; readonly at: number; readonly reason?: string };

function settle(
  name: string,
  outcome: Outcome,
  now: number,
  progress: Progress,
  deps: SendForwardDeps,
): Step {
  const count = (result: 'sent' | 'retrying' | 'failed') => {
    deps.forwards.inc({ destination: name, result });
  };
  const givenUp = (reason: string): Step => {
    count('failed');
    return { kind: 'given-up', reason };
  };
  switch (outcome.kind) {
    case 'sent':
      progress.tries.delete(name);
      progress.heldSince.delete(name);
      count('sent');
      return { kind: 'sent' };
    case 'refused':
      return givenUp(outcome.error.message);
    case 'deferred':
      return { kind: 'due', at: now + outcome.ms };
    case 'held': {
      const since = progress.heldSince.get(name) ?? now;
      progress.heldSince.set(name, since);
      if (now - since >= deps.holdMs) {
        return givenUp('held for FORWARD_HOLD_SECONDS while the destination was paused');
      }
      return { kind: 'due', at: Math.min(since + deps.holdMs, now + HELD_RECHECK_MS) };
    }
    case 'failed': {
      const made = (progress.tries.get(name) ?? 0) + 1;
      progress.tries.set(name, made);
      if (made >= (deps.destinations.get(name)?.attempts ?? 1)) {
        return givenUp(outcome.error.message);
      }
      count('retrying');
      const delay = Math.min(retryDelay(made, deps.backoffMs, outcome.error), deps.maxDelayMs);
      return { kind: 'due', at: now + delay, reason: outcome.error.message };
    }
  }
}
