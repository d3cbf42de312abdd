import { ownValue } from '../util/own-value.js';
import { DelayedError, type Job } from 'bullmq';
import { NeverRetryError } from '../jobs/retry-policy.js';
import { payloadTooBigToKeep } from '../queue/delivery-job-data.js';
import type { ForwardJobData } from './forward-queue.js';
import { formatTraceparent, newTraceContext } from '../telemetry/trace-context.js';
import { activeTrace } from '../telemetry/tracing.js';
import { attemptDestination } from './attempt-destination.js';
import { messageSubject, noteForwards } from './forward-steps.js';
import {
  logFailures,
  pendingData,
  settleAttempts,
  type SendForwardDeps,
} from './settle-attempts.js';

/**
 * One run of a forward job: the message goes to every destination still pending and due at once
 * (attempt-destination.ts), so one that is down, paused or rate-limited holds up none of the
 * others, and one that failed waits its own backoff (settle-attempts.ts). Those that took it are dropped from the job. Each destination counts its own attempts
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
  // A job queued by an earlier version carries none: its attempts share the job span's trace.
  const traceparent = job.data.traceparent ?? formatTraceparent(activeTrace() ?? newTraceContext());
  const now = Date.now();
  const pending = destinations.filter((name) => ownValue(job.data.refused, name) === undefined);
  // One that failed is tried after its own backoff, not whenever another wakes the job; a job
  // woken before any is due (promoted by hand, from a dashboard) tries them all.
  const due = pending.filter((name) => (ownValue(job.data.due, name) ?? 0) <= now);
  const tried = due.length > 0 ? due : pending;
  const resting = pending.filter((name) => !tried.includes(name));
  const outcomes = await Promise.all(
    tried.map((name) =>
      attemptDestination(name, job.id ?? '', { id: messageId, body, traceparent }, deps),
    ),
  );
  const settled = settleAttempts(tried, outcomes, job.data, deps, resting);
  const subject = messageSubject(body);
  if (subject !== undefined) {
    const { heldSince = {} } = job.data;
    noteForwards(deps.timeline, deps.logger, subject, tried, outcomes, settled, [], heldSince);
  }
  const { waiting, givenUp, progress, dueAt, heldDone } = settled;
  await Promise.all(heldDone.map((name) => deps.control.release(name, job.id ?? '')));
  if (waiting.length === 0 && Object.keys(givenUp).length === 0) {
    // Sent everywhere: the job is removed (forward-at-once.ts). One queued by an earlier version
    // is kept an hour, and what it keeps is not the message.
    if (job.opts.removeOnComplete !== true && payloadTooBigToKeep(body)) {
      await job.updateData({ messageId, destinations: [], body: '' });
    }
    return;
  }
  if (waiting.length === 0) {
    await job.updateData({
      messageId,
      body,
      traceparent,
      destinations: Object.keys(givenUp),
      reasons: givenUp,
      // For `failures`; not `tries`, so that `retry` starts each destination's attempts afresh.
      attempted: Object.fromEntries(progress.tries),
    });
    throw new NeverRetryError(summary(givenUp));
  }
  logFailures(tried, outcomes, { jobId: job.id, event: job.name, messageId }, deps);
  await job.updateData(pendingData({ ...job.data, traceparent }, settled));
  await job.moveToDelayed(dueAt, token);
  throw new DelayedError();
}

const summary = (reasons: Readonly<Record<string, string>>) =>
  Object.entries(reasons)
    .map(([name, reason]) => `${name}: ${reason}`)
    .join('; ');
