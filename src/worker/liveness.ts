import { counted } from '../util/counted.js';
/**
 * Is this worker doing its job? A live process is not enough: a known BullMQ failure mode (seen
 * after Sentinel and Cluster failovers) leaves a worker that holds jobs and settles none, or that
 * stops taking jobs while they wait. Kubernetes' liveness probe asks here and restarts a wedged
 * worker; its jobs are taken over by the stalled-job check.
 */
export type LivenessVerdict =
  { readonly ok: true } | { readonly ok: false; readonly reason: string };

export interface LivenessOptions {
  /** Longer than the longest job (WORKER_STALL_MS > DOWNLOAD_TIMEOUT_MS is enforced). */
  readonly stallMs: number;
  readonly concurrency: number;
  /** Jobs ready to run now (waiting + prioritized); rejects when Redis cannot say. */
  readonly readyJobs: () => Promise<number>;
  /** A paused worker idles on purpose. */
  readonly isPaused: () => boolean;
  readonly now?: () => number;
}

export interface Liveness {
  /** Wraps the job processor: a job is held from its start until its processor settles. */
  track<T>(run: () => Promise<T>): Promise<T>;
  check(): Promise<LivenessVerdict>;
}

export function createLiveness(options: LivenessOptions): Liveness {
  const now = options.now ?? Date.now;
  /** Start times of the jobs being processed, by a sequence number of this process. */
  const held = new Map<number, number>();
  let sequence = 0;
  let lastStart = now();

  return {
    async track(run) {
      const key = sequence++;
      lastStart = now();
      held.set(key, lastStart);
      try {
        return await run();
      } finally {
        held.delete(key);
      }
    },

    async check() {
      const at = now();
      const oldest = Math.min(...held.values());
      if (held.size > 0 && at - oldest > options.stallMs) {
        return {
          ok: false,
          reason: `holds ${counted(held.size, 'job')}; the oldest has run ${String(at - oldest)} ms (WORKER_STALL_MS ${String(options.stallMs)})`,
        };
      }
      const idleMs = at - lastStart;
      if (held.size >= options.concurrency || idleMs <= options.stallMs || options.isPaused())
        return { ok: true };
      // Room for more, nothing taken for a while: fine if there is nothing to take. A Redis that
      // cannot answer is not this process's fault, and a restart would not fix it.
      const ready = await options.readyJobs().catch(() => 0);
      return ready === 0
        ? { ok: true }
        : {
            ok: false,
            reason: `${counted(ready, 'job')} ${ready === 1 ? 'waits' : 'wait'}, yet no job was taken for ${String(idleMs)} ms with ${counted(options.concurrency - held.size, 'free slot')}`,
          };
    },
  };
}
