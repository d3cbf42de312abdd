import type { Counter, Histogram } from 'prom-client';
import type { Logger } from 'pino';
import type { ResolvedDestination } from './settings/resolve-destinations.js';
import { isFinal } from '../jobs/retry-policy.js';
import type { SlidingWindowLimiter } from '../redis/sliding-window-limiter.js';
import type { DestinationBoard } from './destination-board.js';
import type { DestinationControl } from './destination-control.js';
import { DeadlineError, timeoutSignal } from '../util/deadline.js';
import { PermanentForwardError, type Outgoing, type Sender } from './senders/sender.js';
import { formatTraceparent, parseTraceparent } from '../telemetry/trace-context.js';
import { inTraceSpan } from '../telemetry/tracing.js';

/** How one attempt at one destination ended. */
export type Outcome =
  | { readonly kind: 'sent' }
  /** Failed; tried again after the backoff, or `error.retryAfterMs` if longer. */
  | { readonly kind: 'failed'; readonly error: Error }
  /** Refused for good (PermanentForwardError): never tried again by this job. */
  | { readonly kind: 'refused'; readonly error: Error }
  /** The destination is paused: the job waits, no attempt counted. */
  | { readonly kind: 'held' }
  /**
   * Its rate or a Retry-After says not yet, or it did not answer within `within` (a send from
   * the delivery job): try again in `ms`, no attempt counted.
   */
  | { readonly kind: 'deferred'; readonly ms: number };

export interface AttemptDeps {
  readonly destinations: ReadonlyMap<string, ResolvedDestination>;
  readonly senders: ReadonlyMap<string, Sender>;
  readonly board: DestinationBoard;
  readonly control: DestinationControl;
  readonly limiter: SlidingWindowLimiter;
  readonly latency: Histogram<'destination'>;
  readonly transitions: Counter<'destination' | 'to'>;
  readonly logger: Logger;
}

/**
 * One message to one destination, as its shared state allows: a paused destination holds it (or
 * lets it through as the probe), its rate or a Retry-After defers it, else it is sent within the
 * destination's timeout. What the send teaches is shared at once: a failure counts toward the
 * pause (unless the destination said when to come back: that is a wait, not a failure), a
 * Retry-After holds the destination for every worker, a success ends a run of failures.
 */
export async function attemptDestination(
  name: string,
  jobId: string,
  message: Outgoing,
  deps: AttemptDeps,
  /**
   * How long to wait for its answer when that is shorter than its timeout (a send from the
   * delivery job): a send not answered by then is deferred, not failed, and counts no attempt.
   */
  within = Infinity,
): Promise<Outcome> {
  const destination = deps.destinations.get(name);
  const sender = deps.senders.get(name);
  if (destination === undefined || sender === undefined) {
    return refused(new PermanentForwardError("no longer in this worker's forward destinations"));
  }
  const seen = deps.board.get(name);
  const decision = seen?.state === 'paused' ? await deps.control.decide(name, jobId) : 'send';
  if (decision === 'hold') return { kind: 'held' };
  const window = deps.control.window(name, destination.ratePerSecond);
  let entry: string | undefined;
  if (destination.ratePerSecond !== undefined || (seen?.waitUntil ?? 0) > Date.now()) {
    const admitted = await deps.limiter.tryAdmit(window);
    // Spread over a window: the jobs waiting for one destination do not all wake at once.
    if (typeof admitted === 'number') return { kind: 'deferred', ms: admitted + spread(window) };
    entry = admitted.entry;
  }
  const timer = deps.latency.startTimer({ destination: name });
  // One timer per send: `within` when it is the shorter, which then only defers the message.
  const cutShort = within < destination.timeoutMs;
  const { signal, clear } = timeoutSignal(cutShort ? within : destination.timeoutMs);
  try {
    await sendInTrace(name, sender, message, signal);
    timer();
    if (decision === 'probe' || (seen?.fails ?? 0) > 0) await succeeded(name, deps);
    return { kind: 'sent' };
  } catch (caught: unknown) {
    const error = caught instanceof Error ? caught : new Error(String(caught));
    // Slow, not failed: the forward job waits for it with the destination's whole timeout (and
    // sends it again, if this one arrived after all). Not a send time: none was measured.
    if (cutShort && signal.aborted && abortedBy(error, signal)) return { kind: 'deferred', ms: 0 };
    timer();
    if (isFinal(error)) return refused(error);
    await failed(name, error, window, deps);
    // A failed probe is the destination's failure, not the message's: it is held again.
    return decision === 'probe' ? { kind: 'held' } : { kind: 'failed', error };
  } finally {
    clear();
    if (entry !== undefined) await deps.limiter.settle(window, entry).catch(() => undefined);
  }
}

const refused = (error: Error): Outcome => ({ kind: 'refused', error });

/**
 * One send, as a span of the delivery's trace (a producer's: the consumer's span is its child);
 * the message carries that span's `traceparent`, or with tracing off the delivery's trace id under
 * a span id of its own.
 */
function sendInTrace(
  name: string,
  sender: Sender,
  message: Outgoing,
  signal: AbortSignal,
): Promise<void> {
  const delivery = parseTraceparent(message.traceparent);
  if (delivery === undefined) return sender.send(message, signal);
  return inTraceSpan(`forward ${name}`, { 'audio_webhooks.destination': name }, delivery, (trace) =>
    sender.send({ ...message, traceparent: formatTraceparent(trace) }, signal),
  );
}

/** The send failed because `signal` ended it (not with an answer that came as late). */
function abortedBy(error: unknown, signal: AbortSignal): boolean {
  for (let cause = error; cause instanceof Error; cause = cause.cause) {
    if (cause === signal.reason || cause instanceof DeadlineError) return true;
    if (cause.name === 'AbortError' || cause.name === 'TimeoutError') return true;
  }
  return false;
}
const spread = (window: { readonly windowMs: number }) =>
  Math.floor(Math.random() * window.windowMs);

async function succeeded(name: string, deps: AttemptDeps): Promise<void> {
  deps.board.note(name, { fails: 0 });
  if (!(await deps.control.succeeded(name))) return;
  deps.board.note(name, { state: 'active' });
  deps.transitions.inc({ destination: name, to: 'active' });
  deps.logger.info({ destination: name }, 'forward destination resumed: a probe succeeded');
}

async function failed(
  name: string,
  error: Error,
  window: Parameters<SlidingWindowLimiter['pause']>[0],
  deps: AttemptDeps,
): Promise<void> {
  const asked = (error as { retryAfterMs?: unknown }).retryAfterMs;
  if (typeof asked === 'number' && asked > 0) {
    await deps.limiter.pause(window, asked);
    deps.board.note(name, { waitUntil: Date.now() + asked });
    return;
  }
  const fails = (deps.board.get(name)?.fails ?? 0) + 1;
  deps.board.note(name, { fails });
  const now = await deps.control.failed(name);
  if (now === 'active') return;
  deps.board.note(name, { state: 'paused' });
  if (now === 'was-paused') return;
  deps.transitions.inc({ destination: name, to: 'paused' });
  deps.logger.warn(
    { destination: name, reason: error.message },
    'forward destination paused: FORWARD_PAUSE_AFTER failures in a row; its messages are held, one probe at a time tries it',
  );
}
