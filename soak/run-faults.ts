import { setTimeout as sleep } from 'node:timers/promises';
import type { PlannedFault, Target } from './fault-plan.js';
import { inject, type InjectedFault } from './inject.js';
import type { System } from './system.js';

/**
 * Runs the planned faults at their offsets. Two faults of one target never overlap: the later
 * waits for the earlier to be undone, and is dropped (counted as skipped) if it could then no
 * longer end before `stopAt`. Faults of different targets run at once, as they may in life.
 */
export interface FaultLog {
  readonly injected: InjectedFault[];
  readonly skipped: { readonly kind: string; readonly why: string }[];
  /** Injections that failed (the system could not be broken or restored as planned). */
  readonly errors: string[];
}

export async function runFaults(
  plan: readonly PlannedFault[],
  system: System,
  { startedAt, stopAt, say }: { startedAt: number; stopAt: number; say: (line: string) => void },
): Promise<FaultLog> {
  const log: FaultLog = { injected: [], skipped: [], errors: [] };
  const busy = new Map<Target, Promise<unknown>>();
  const all: Promise<unknown>[] = [];
  for (const fault of plan) {
    const due = startedAt + fault.atMs;
    if (due > Date.now()) await sleep(due - Date.now());
    const running = (async () => {
      await busy.get(fault.target);
      if (Date.now() + fault.durationMs > stopAt) {
        log.skipped.push({ kind: fault.kind, why: 'its target was busy until too late' });
        return;
      }
      try {
        const done = await inject(fault, system);
        const skipped = done.details.skipped;
        if (typeof skipped === 'string') log.skipped.push({ kind: fault.kind, why: skipped });
        else {
          log.injected.push(done);
          say(
            `soak: fault ${done.kind} (${done.target}) ${((done.startMs - startedAt) / 1000).toFixed(1)}–${((done.endMs - startedAt) / 1000).toFixed(1)} s`,
          );
        }
      } catch (error: unknown) {
        log.errors.push(`${fault.kind}: ${String(error)}`);
        say(`soak: fault ${fault.kind} failed: ${String(error)}`);
      }
    })();
    busy.set(fault.target, running);
    all.push(running);
  }
  await Promise.all(all);
  return log;
}
