import { UnrecoverableError, type Job } from 'bullmq';
import type { Counter } from 'prom-client';
import { payloadTooBigToKeep } from '../queue/delivery-queue.js';
import type { ForwardJobData } from '../queue/forward-queue.js';
import { ForwardError, PermanentForwardError, type Sender } from './sender.js';

export interface SendForwardDeps {
  readonly senders: ReadonlyMap<string, Sender>;
  readonly timeoutMs: number;
  /** FORWARD_ATTEMPTS: the attempt after which a failure is final. */
  readonly attempts: number;
  readonly forwards: Counter<'destination' | 'result'>;
}

/**
 * One attempt of a forward job: the message goes to every destination still pending at once,
 * each within FORWARD_TIMEOUT_MS, so a down one holds up none of the others. Those that took it
 * are dropped from the job (a retry sends to the rest only). A refusal no attempt can change (a
 * message over a server's maximum, a destination no longer configured) is not tried again: the
 * job fails for good once nothing else is left to retry, instead of after all of
 * FORWARD_ATTEMPTS (15–30 minutes of alerts at the defaults). A job that fails for good names
 * every destination that did not take it, so `retry <jobId>` sends to each of them again.
 */
export async function sendForward(job: Job<ForwardJobData>, deps: SendForwardDeps): Promise<void> {
  const { destinations, messageId, body } = job.data;
  const refused: Record<string, string> = { ...job.data.refused };
  const signal = AbortSignal.timeout(deps.timeoutMs);
  const tried = destinations.filter((name) => !(name in refused));
  const results = await Promise.allSettled(
    tried.map(async (name) => {
      const sender = deps.senders.get(name);
      if (sender === undefined) {
        throw new PermanentForwardError("no longer in this worker's forward destinations");
      }
      await sender.send({ id: messageId, body }, signal);
    }),
  );
  const lastAttempt = job.attemptsMade + 1 >= deps.attempts;
  const retrying: Record<string, string> = {};
  results.forEach((result, index) => {
    const destination = tried[index] ?? '';
    if (result.status === 'fulfilled') {
      deps.forwards.inc({ destination, result: 'sent' });
      return;
    }
    const reason = result.reason instanceof Error ? result.reason.message : String(result.reason);
    if (result.reason instanceof PermanentForwardError) refused[destination] = reason;
    else retrying[destination] = reason;
    const final = lastAttempt || result.reason instanceof PermanentForwardError;
    deps.forwards.inc({ destination, result: final ? 'failed' : 'retrying' });
  });
  const reasons = { ...retrying, ...refused };
  const pending = Object.keys(reasons);
  if (pending.length === 0) {
    // Sent everywhere: the job is kept an hour, and what it keeps is not the message.
    if (payloadTooBigToKeep(body)) await job.updateData({ messageId, destinations: [], body: '' });
    return;
  }
  const summary = pending.map((name) => `${name}: ${reasons[name] ?? ''}`).join('; ');
  if (lastAttempt || Object.keys(retrying).length === 0) {
    await job.updateData({ messageId, body, destinations: pending, reasons });
    throw new UnrecoverableError(summary);
  }
  await job.updateData({ messageId, body, destinations: pending, reasons, refused });
  throw new ForwardError(summary);
}
