import type { ResolvedDestination } from './settings/resolve-destinations.js';
import { forwardJobId, type ForwardJobData, type ForwardQueue } from './forward-queue.js';
import { attemptDestination } from './attempt-destination.js';
import type { ForwardMessage } from './forward-message.js';
import { messageId } from './message-id.js';
import { noteForwards } from './forward-steps.js';
import {
  logFailures,
  pendingData,
  settleAttempts,
  type SendForwardDeps,
} from './settle-attempts.js';

/**
 * How long the delivery job waits for a destination's answer (when its timeout is longer): one
 * that has not answered by then is left to a forward job, with no attempt counted.
 */
export const AT_ONCE_MS = 1000;

const NOTHING_SETTLED = { givenUp: {}, progress: { tries: new Map(), heldSince: new Map() } };

/**
 * Forwards a handled delivery's message from the delivery job itself, to every destination whose
 * filter it matches (one without a filter takes every message; a message none wants makes no
 * job). Each destination this process last saw active is sent to at once, in parallel, as a
 * forward job's attempt would (attempt-destination.ts: its rate, its Retry-After, its failures
 * toward a pause); only what did not take it — failed, deferred, slow, paused — goes on the
 * forward queue, in one job whose id follows from the delivery job, carrying the attempts made.
 * When every destination answers at once, which is the usual case, there is no forward job: a
 * second job per delivery, with its own Redis round trips, costs the worker far more than the
 * send (docs/performance-history.md, "Figures behind the code"). Nothing is lost: the delivery job completes only after this resolves, so a worker
 * killed first leaves it to run again (at least once: those that took it get it again).
 */
export async function forwardAtOnce(
  queue: ForwardQueue,
  destinations: readonly ResolvedDestination[],
  deliveryJobId: string,
  message: ForwardMessage,
  deps: SendForwardDeps,
): Promise<void> {
  const wanting = destinations.filter((d) => d.filter?.matches(message.fields) ?? true);
  const subject = { event: message.type, id: message.id, receivedAt: Date.now() };
  const filtered = destinations
    .filter((d) => !wanting.includes(d))
    .map((d) => ({ name: d.name, code: 'x' as const }));
  if (wanting.length === 0) {
    noteForwards(deps.timeline, deps.logger, subject, [], [], NOTHING_SETTLED, filtered);
    return;
  }
  const id = messageId(message.type, message.id);
  // A paused destination is not sent to from here; its state is known once it was read.
  await deps.board.read();
  const now = Date.now();
  // Not read (Redis failed the first read), paused, or asked to wait: the forward job's.
  const tried = wanting
    .filter((d) => {
      const seen = deps.board.get(d.name);
      return seen !== undefined && seen.state === 'active' && seen.waitUntil <= now;
    })
    .map((d) => d.name);
  const outcomes = await Promise.all(
    tried.map((name) =>
      attemptDestination(
        name,
        deliveryJobId,
        { id, body: message.body, traceparent: message.traceparent },
        deps,
        AT_ONCE_MS,
      ),
    ),
  );
  const untried = wanting.map((d) => d.name).filter((name) => !tried.includes(name));
  const settled = settleAttempts(tried, outcomes, {}, deps, untried);
  noteForwards(deps.timeline, deps.logger, subject, tried, outcomes, settled, [
    ...filtered,
    ...untried.map((name) => ({ name, code: 'p' as const })),
  ]);
  if (settled.waiting.length === 0 && Object.keys(settled.givenUp).length === 0) return;
  const jobId = forwardJobId(deliveryJobId);
  logFailures(tried, outcomes, { jobId, event: message.type, messageId: id }, deps);
  const { body, traceparent } = message;
  const data: ForwardJobData = pendingData({ messageId: id, body, traceparent }, settled);
  // Due when its first destination is (at once for one not tried); nothing waiting (all given
  // up): it runs at once and fails, listed by `failures`.
  const dueAt = settled.waiting.length === 0 ? now : settled.dueAt;
  await queue.add(message.type, data, {
    jobId,
    delay: Math.max(0, dueAt - Date.now()),
    // Sent everywhere, it is removed: a handled delivery leaves at most 2 KB in Redis, and its
    // completed job takes most of that (docs/capacity.md). A delivery job run again after that
    // (its worker died before completing it) may then queue the message again: at least once,
    // the consumers dedupe on its id. A job that fails is kept, with its message, for `retry`.
    removeOnComplete: true,
  });
}
