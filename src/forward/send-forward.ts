import type { Job } from 'bullmq';
import type { Counter } from 'prom-client';
import type { ForwardJobData } from './forward-queue.js';
import { ForwardError, type Sender } from './sender.js';

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
 * are dropped from the job (a retry sends to the rest only); when any did not, the attempt fails
 * and BullMQ retries it after the backoff.
 */
export async function sendForward(job: Job<ForwardJobData>, deps: SendForwardDeps): Promise<void> {
  const { destinations, messageId, body } = job.data;
  const signal = AbortSignal.timeout(deps.timeoutMs);
  const results = await Promise.allSettled(
    destinations.map(async (name) => {
      const sender = deps.senders.get(name);
      if (sender === undefined) throw new ForwardError("no longer in this worker's FORWARD_URLS");
      await sender.send({ id: messageId, body }, signal);
    }),
  );
  const final = job.attemptsMade + 1 >= deps.attempts;
  const reasons: Record<string, string> = {};
  results.forEach((result, index) => {
    const destination = destinations[index] ?? '';
    if (result.status === 'rejected') {
      reasons[destination] =
        result.reason instanceof Error ? result.reason.message : String(result.reason);
    }
    const outcome = result.status === 'fulfilled' ? 'sent' : final ? 'failed' : 'retrying';
    deps.forwards.inc({ destination, result: outcome });
  });
  const pending = Object.keys(reasons);
  if (pending.length === 0) return;
  await job.updateData({ ...job.data, destinations: pending, reasons });
  throw new ForwardError(pending.map((name) => `${name}: ${reasons[name] ?? ''}`).join('; '));
}
