import type { Worker } from 'bullmq';
import type { WriteGate } from '../redis/write-gate.js';

/** How often, while in the reserve, the forward backlog is read again. */
const CHECK_EVERY_MS = 1_000;

/**
 * The delivery workers in the workers' reserve (docs/capacity.md, "When Redis fills"). While
 * forwards wait to be sent they take no new job: sending those is what frees memory then, and
 * each delivery drained would add its own. With no forward waiting, nothing frees memory but a
 * drained delivery (its body goes once it completes), so they take jobs one at a time: a Redis
 * carried into the reserve by anything else (the receivers' last writes, timelines, log entries) is drained
 * rather than held for good.
 *
 * `forwardsWaiting` reads the forward queue (waiting, active, delayed): a read, which Redis
 * serves at maxmemory too.
 */
export function drainInReserve(
  worker: Pick<Worker, 'pause' | 'resume' | 'isPaused' | 'concurrency'>,
  gate: Pick<WriteGate, 'holding' | 'onChange'>,
  forwardsWaiting: () => Promise<number>,
): () => void {
  const concurrency = worker.concurrency;
  let timer: NodeJS.Timeout | undefined;
  const inReserve = () => gate.holding === 'memory_reserve';

  const check = async (): Promise<void> => {
    timer = undefined;
    if (!inReserve()) return;
    const waiting = await forwardsWaiting().catch(() => 1); // unknown: hold, as before
    if (!inReserve()) return; // the gate changed meanwhile; its own listener decided
    if (waiting > 0) await worker.pause(true);
    else {
      worker.concurrency = 1;
      void worker.resume();
    }
    timer = setTimeout(() => void check(), CHECK_EVERY_MS);
    timer.unref();
  };

  const stop = gate.onChange((reason) => {
    clearTimeout(timer);
    timer = undefined;
    if (reason === 'memory_reserve') void check();
    else worker.concurrency = concurrency;
  });
  return () => {
    stop();
    clearTimeout(timer);
  };
}
