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
  const givenUp: Record<string, string> = { ...job.data.refused };
  const tried = destinations.filter((name) => !(name in givenUp));
  const outcomes = await Promise.all(
    tried.map((name) => attemptDestination(name, job.id ?? '', { id: messageId, body }, deps)),
  );
  const now = Date.now();
  const next: Progress = {
    tries: new Map(Object.entries(job.data.tries ?? {})),
    heldSince: new Map(Object.entries(job.data.heldSince ?? {})),
  };
  const reasons = new Map(Object.entries(job.data.reasons ?? {}));
  const waiting: string[] = [];
  const released: Promise<void>[] = [];
  let dueAt = Infinity;
  tried.forEach((name, index) => {
    const wasHeld = next.heldSince.has(name);
    const step = settle(name, outcomes[index] ?? { kind: 'sent' }, now, next, deps);
    if (wasHeld && step.kind !== 'due') released.push(deps.control.release(name, job.id ?? ''));
    if (step.kind === 'sent') reasons.delete(name);
    else if (step.kind === 'given-up') givenUp[name] = step.reason;
    else {
      if (step.reason !== undefined) reasons.set(name, step.reason);
      waiting.push(name);
      dueAt = Math.min(dueAt, step.at);
    }
  });
  await Promise.all(released);
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
      attempted: Object.fromEntries(next.tries),
    });
    throw new UnrecoverableError(summary(givenUp));
  }
  const failures = Object.fromEntries(
    tried.flatMap((name, index) => {
      const outcome = outcomes[index];
      return outcome?.kind === 'failed' ? [[name, outcome.error.message]] : [];
    }),
  );
  if (Object.keys(failures).length > 0) {
    deps.logger.warn(
      { jobId: job.id, event: job.name, messageId, reasons: failures },
      'forward failed; will retry',
    );
  }
  await job.updateData({
    messageId,
    body,
    destinations: [...waiting, ...Object.keys(givenUp)],
    reasons: Object.fromEntries(reasons),
    refused: givenUp,
    tries: Object.fromEntries(next.tries),
    heldSince: Object.fromEntries(next.heldSince),
  });
  await job.moveToDelayed(dueAt, token);
  throw new DelayedError();
}

/** Per destination: failed attempts, and when it was first held. */
interface Progress {
  readonly tries: Map<string, number>;
  readonly heldSince: Map<string, number>;
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
