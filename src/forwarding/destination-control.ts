import type { RedisConnection } from '../redis/connections.js';
import type { Window } from '../redis/sliding-window-limiter.js';
import { DECIDE, FAILED, PAUSE, RESUME, SUCCEEDED, TICK } from './destination-scripts.js';

/** What every process knows of a destination, shared in Redis (docs/forwarding.md). */
export interface DestinationStatus {
  readonly name: string;
  readonly state: 'active' | 'paused';
  /** Why it is paused: FORWARD_PAUSE_AFTER failures in a row, or `forward pause`. */
  readonly pausedBy?: 'failing' | 'operator';
  /** When it was paused (ms since the epoch, Redis's clock). */
  readonly pausedSince?: number;
  /** Failed sends in a row. */
  readonly fails: number;
  /** Forward jobs held for it while paused. */
  readonly held: number;
  /** When the job held longest was first held (ms since the epoch). */
  readonly oldestHeldAt?: number;
  /** How long it asked (Retry-After) to be left alone still, in ms; 0: not asked. */
  readonly retryAfterMs: number;
}

/** What one tick found, and the work it handed this process. */
export interface TickResult {
  readonly status: DestinationStatus;
  /** The held job allowed to try the paused destination now; promote it. */
  readonly probe?: string;
  /** Held jobs of a destination active again: promote them (a bounded batch per tick). */
  readonly promote: readonly string[];
}

export type Decision = 'send' | 'probe' | 'hold';

export interface DestinationControl {
  /** Reads each destination; with `act`, takes the held jobs to promote and the probes due. */
  tick(act: boolean): Promise<readonly TickResult[]>;
  /** For a job about to send to a destination seen paused: go, probe, or hold (recorded). */
  decide(name: string, jobId: string): Promise<Decision>;
  /** A send failed: whether this paused the destination, found it paused already, or neither. */
  failed(name: string): Promise<'paused' | 'was-paused' | 'active'>;
  /** A send succeeded: true when this success resumed a destination paused for failing. */
  succeeded(name: string): Promise<boolean>;
  /** The job no longer waits for the destination (sent, given up, gone): out of its held set. */
  release(name: string, jobId: string): Promise<void>;
  /** Puts a job back in the held set (a promotion that found it running: it may be held again). */
  rehold(name: string, jobId: string): Promise<void>;
  /** `forward pause`: true when this changed it. */
  pause(name: string): Promise<boolean>;
  /** `forward resume`: true when this changed it. */
  resume(name: string): Promise<boolean>;
  /** The destination's window on the one limiter (redis/), at `perSecond`; the pause alone when unset. */
  window(name: string, perSecond: number | undefined): Window;
}

/** Held jobs one tick promotes per destination and process: a resumed destination drains in batches. */
export const DRAIN_BATCH = 100;

/**
 * The shared state of a set of destinations (the scripts in destination-scripts.ts): pauses, the
 * runs of failures that cause them, the held jobs, the probe lock, and each destination's window
 * on the limiter. Keys live under QUEUE_PREFIX (its hash tag keeps them in one cluster slot).
 */
export function destinationControl(
  redis: RedisConnection,
  prefix: string,
  names: readonly string[],
  { pauseAfter, probeMs }: { readonly pauseAfter: number; readonly probeMs: number },
): DestinationControl {
  const keys = (name: string) => {
    const base = `${prefix}:forward:${name}`;
    return [`${base}:state`, `${base}:held`, `${base}:probe`, `${base}:retry-after`] as const;
  };
  const run = async (script: string, name: string, ...args: (string | number)[]) =>
    redis.eval(script, 4, ...keys(name), ...args);
  const changed = async (script: string, name: string, ...args: (string | number)[]) =>
    Number(await run(script, name, ...args)) === 1;
  return {
    async tick(act) {
      return Promise.all(
        names.map(async (name) =>
          tickResult(name, (await run(TICK, name, DRAIN_BATCH, probeMs, act ? '1' : '0')) as Tick),
        ),
      );
    },
    decide: async (name, jobId) => String(await run(DECIDE, name, jobId)) as Decision,
    async failed(name) {
      const answer = Number(await run(FAILED, name, pauseAfter));
      return answer === 1 ? 'paused' : answer === 2 ? 'was-paused' : 'active';
    },
    succeeded: (name) => changed(SUCCEEDED, name),
    async release(name, jobId) {
      const [, held] = keys(name);
      await redis.zrem(held, jobId);
    },
    async rehold(name, jobId) {
      const [, held] = keys(name);
      await redis.zadd(held, 'NX', Date.now(), jobId);
    },
    pause: (name) => changed(PAUSE, name),
    resume: (name) => changed(RESUME, name),
    window(name, perSecond) {
      const [, , , pause] = keys(name);
      // A whole number of sends per second is counted per second; 0.5/s as 1 per 2 s.
      const whole = perSecond !== undefined && Number.isInteger(perSecond);
      return {
        log: `${prefix}:forward:${name}:sent`,
        pause,
        limit: whole ? perSecond : 1,
        windowMs: perSecond === undefined || whole ? 1000 : Math.ceil(1000 / perSecond),
      };
    },
  };
}

type Tick = [string, string, string, number, string, number, string, string[]];

function tickResult(name: string, reply: Tick): TickResult {
  const [paused, fails, since, held, oldest, wait, probe, promote] = reply;
  const pausedBy = paused === 'failing' || paused === 'operator' ? paused : undefined;
  const status: DestinationStatus = {
    name,
    state: pausedBy === undefined ? 'active' : 'paused',
    ...(pausedBy === undefined ? {} : { pausedBy, pausedSince: Number(since) }),
    fails: Number(fails),
    held,
    ...(oldest === '' ? {} : { oldestHeldAt: Number(oldest) }),
    retryAfterMs: Math.max(0, wait),
  };
  return { status, ...(probe === '' ? {} : { probe }), promote };
}
