import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import type { Counter } from 'prom-client';
import { retryDelay } from '../jobs/retry-policy.js';
import { payloadTooBigToKeep } from '../queue/delivery-queue.js';
import type { ForwardJobData } from '../queue/forward-queue.js';
import { attemptDestination, type AttemptDeps, type Outcome } from './attempt-destination.js';

export interface SendForwardDeps extends AttemptDeps {
  /** FORWARD_BACKOFF_MS: the first retry's delay, doubled per attempt. */
  readonly backoffMs: number;
  /** The longest delay between two attempts. */
  readonly maxDelayMs: number;
  /** FORWARD_HOLD_SECONDS, in ms: held longer, a message fails as if its attempts ran out. */
  readonly holdMs: number;
  readonly forwards: Counter<'destination' | 'result'>;
}

/** A held job wakes this often to look again (a promotion lost with a crashed process). */
export const HELD_RECHECK_MS = 15 * 60 * 1000;

/**
 * One run of a forward job: the message goes to every destination still pending at once
 * (attempt-destination.ts), so one that is down, paused or rate-limited holds up none of the
 * others. Those that took it are dropped from the job. Each destination counts its own attempts
 * (its `attempts`, else FORWARD_ATTEMPTS); a hold or a deferral counts none. A destination out
 * of attempts, held past FORWARD_HOLD_SECONDS, or refusing for good is given up while the
 * others go on; once nothing else is left the job fails for good, naming every destination that
 * did not take it, so `retry <jobId>` sends to each of them again. Otherwise the job waits
 * (BullMQ's moveToDelayed: no attempt of BullMQ's counted) until the first destination is due.
 */
export async function sendForward(
  job: Job<ForwardJobData>,
  token: string | undefined,
  deps: SendForwardDeps,
): Promise<void> {
  const { destinations, messageId, body } = job.data;
  const tried = destinations.filter((name) => !(name in (job.data.refused ?? {})));
  const outcomes = await Promise.all(
    tried.map((name) => attemptDestination(name, job.id ?? '', { id: messageId, body }, deps)),
  );
  const { waiting, givenUp, reasons, progress, dueAt, heldDone } = settleAttempts(
    tried,
    outcomes,
    job.data,
    deps,
  );
  await Promise.all(heldDone.map((name) => deps.control.release(name, job.id ?? '')));
  if (waiting.length === 0 && Object.keys(givenUp).length === 0) {
    // Sent everywhere: the job is kept an hour, and what it keeps is not the message.
    if (payloadTooBigToKeep(body)) await job.updateData({ messageId, destinations: [], body: '' });
    return;
  }
  if (waiting.length === 0) {
    await job.updateData({
      messageId,
      body,
      destinations: Object.keys(givenUp),
      reasons: givenUp,
      // For `failures`; not `tries`, so that `retry` starts each destination's attempts afresh.
      attempted: Object.fromEntries(progress.tries),
    });
    throw new UnrecoverableError(summary(givenUp));
  }
  logFailures(tried, outcomes, { jobId: job.id, event: job.name, messageId }, deps);
  await job.updateData(pendingData(job.data, { waiting, givenUp, reasons, progress }));
  await job.moveToDelayed(dueAt, token);
  throw new DelayedError();
}

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
  /** Given up, with why: those of earlier attempts, and now. */
  readonly givenUp: Readonly<Record<string, string>>;
  /** Why each waiting one failed last. */
  readonly reasons: ReadonlyMap<string, string>;
  readonly progress: Progress;
  /** Held before and not held now: they leave the destination's held set. */
  readonly heldDone: readonly string[];
}

/** Each outcome of an attempt at `tried` (counted in `webhook_forwards_total`), for the job. */
export function settleAttempts(
  tried: readonly string[],
  outcomes: readonly Outcome[],
  before: Pick<ForwardJobData, 'refused' | 'tries' | 'heldSince' | 'reasons'>,
  deps: SendForwardDeps,
): Settled {
  const now = Date.now();
  const progress: Progress = {
    tries: new Map(Object.entries(before.tries ?? {})),
    heldSince: new Map(Object.entries(before.heldSince ?? {})),
  };
  const givenUp: Record<string, string> = { ...before.refused };
  const reasons = new Map(Object.entries(before.reasons ?? {}));
  const waiting: string[] = [];
  const heldDone: string[] = [];
  let dueAt = Infinity;
  tried.forEach((name, index) => {
    const wasHeld = progress.heldSince.has(name);
    const step = settle(name, outcomes[index] ?? { kind: 'sent' }, now, progress, deps);
    if (wasHeld && step.kind !== 'due') heldDone.push(name);
    if (step.kind === 'sent') reasons.delete(name);
    else if (step.kind === 'given-up') givenUp[name] = step.reason;
    else {
      if (step.reason !== undefined) reasons.set(name, step.reason);
      waiting.push(name);
      dueAt = Math.min(dueAt, step.at);
    }
  });
  return { waiting, dueAt, givenUp, reasons, progress, heldDone };
}

/** A job's data while some destinations wait: those first, then those given up. */
export function pendingData(
  data: Pick<ForwardJobData, 'messageId' | 'body'>,
  { waiting, givenUp, reasons, progress }: Omit<Settled, 'dueAt' | 'heldDone'>,
): ForwardJobData {
  return {
    messageId: data.messageId,
    body: data.body,
    destinations: [...waiting, ...Object.keys(givenUp)],
    reasons: Object.fromEntries(reasons),
    refused: givenUp,
    tries: Object.fromEntries(progress.tries),
    heldSince: Object.fromEntries(progress.heldSince),
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

const summary = (reasons: Readonly<Record<string, string>>) =>
  Object.entries(reasons)
    .map(([name, reason]) => `${name}: ${reason}`)
    .join('; ');
