import type { Random } from './prng.js';

/**
 * The faults of a run, drawn from the seed before it starts (pure: same seed, same schedule).
 * The kinds are dealt in rounds, each round every kind once in a shuffled order, so that a run
 * of N rounds injects every kind N times; the gaps between starts are exponential (Poisson).
 */
export const FAULT_KINDS = [
  'kill_receiver',
  'kill_worker',
  'kill_redis',
  'pause_redis',
  'nats_stopped',
  'rabbit_exchange_removed',
  'http_503',
  'http_429',
  'http_hang',
  'cdn_failing',
  'cdn_slow',
  'cdn_truncating',
  'store_full',
  'destination_paused',
] as const;

/**
 * A Cluster's faults (`--redis cluster`), dealt in place of kill_redis and pause_redis: one
 * primary SIGKILLed (its replica takes its slots; the node is started again later and rejoins as
 * a replica), or SIGSTOPped for a while (past the node timeout, its replica takes over too).
 */
export const CLUSTER_FAULT_KINDS = ['kill_primary', 'pause_primary'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number] | (typeof CLUSTER_FAULT_KINDS)[number];

/** The kinds a run deals: on a Cluster, its primaries' faults take the one server's place. */
export function faultKindsFor(redis: 'single' | 'cluster'): readonly FaultKind[] {
  if (redis === 'single') return FAULT_KINDS;
  return FAULT_KINDS.map((kind) =>
    kind === 'kill_redis' ? 'kill_primary' : kind === 'pause_redis' ? 'pause_primary' : kind,
  );
}

/** The destinations, by the names the report and FORWARD_CONFIG give them. */
export const DESTINATIONS = ['http', 'nats', 'amqp'] as const;
export type DestinationName = (typeof DESTINATIONS)[number];

/** What a fault acts on: two faults of one target never overlap (the second waits). */
export type Target = 'receiver' | 'worker' | 'redis' | 'cdn' | 'store' | DestinationName;

export interface PlannedFault {
  readonly kind: FaultKind;
  /** Offset from the start of traffic. */
  readonly atMs: number;
  /** How long it lasts (a kill: how long the process stays down; 0: replaced by its parent). */
  readonly durationMs: number;
  readonly target: Target;
  /** Which of two processes (kills), the Retry-After (429), the destination (paused). */
  readonly which: number;
}

/** Seconds, before `durationScale`: long enough to matter, short enough to recover from. */
const DURATION_S: Readonly<Record<FaultKind, readonly [number, number]>> = {
  kill_receiver: [0, 0],
  kill_worker: [1, 8],
  kill_redis: [0.5, 5],
  // The receiver's Redis deadline is 1 s: every pause outlasts it.
  pause_redis: [1.5, 8],
  // How long the killed primary stays down once its replica has taken over.
  kill_primary: [3, 20],
  // Some shorter than the Cluster's node timeout (nothing fails over), some longer.
  pause_primary: [2, 10],
  nats_stopped: [3, 25],
  rabbit_exchange_removed: [3, 25],
  http_503: [3, 20],
  http_429: [3, 20],
  http_hang: [3, 20],
  cdn_failing: [3, 20],
  cdn_slow: [5, 25],
  cdn_truncating: [3, 20],
  store_full: [5, 25],
  // Past FORWARD_PAUSE_AFTER failures in a row, and then some probes.
  destination_paused: [45, 90],
};

function targetOf(kind: FaultKind, which: number): Target {
  switch (kind) {
    case 'kill_receiver':
      return 'receiver';
    case 'kill_worker':
      return 'worker';
    case 'kill_redis':
    case 'pause_redis':
    case 'kill_primary':
    case 'pause_primary':
      return 'redis';
    case 'nats_stopped':
      return 'nats';
    case 'rabbit_exchange_removed':
      return 'amqp';
    case 'http_503':
    case 'http_429':
    case 'http_hang':
      return 'http';
    case 'cdn_failing':
    case 'cdn_slow':
    case 'cdn_truncating':
      return 'cdn';
    case 'store_full':
      return 'store';
    case 'destination_paused':
      return DESTINATIONS[which % DESTINATIONS.length] ?? 'http';
  }
}

export interface FaultPlanOptions {
  readonly startMs: number;
  /** No fault is planned to last past this. */
  readonly endMs: number;
  /** Mean gap between two starts. */
  readonly meanGapMs: number;
  /** Multiplies every duration (a short run's faults are shorter). */
  readonly durationScale: number;
  /** Minimum duration of destination_paused, whatever the scale (it must reach the pause). */
  readonly minPausedMs: number;
  /** The kinds to deal. @defaultValue every kind */
  readonly kinds?: readonly FaultKind[];
}

export function planFaults(random: Random, options: FaultPlanOptions): PlannedFault[] {
  const faults: PlannedFault[] = [];
  let at = options.startMs;
  for (;;) {
    const kinds = options.kinds ?? FAULT_KINDS;
    if (kinds.length === 0) return faults;
    for (const kind of random.shuffle(kinds)) {
      at += Math.max(1000, random.exponential(options.meanGapMs));
      const [low, high] = DURATION_S[kind];
      const scaled = random.between(low, high) * 1000 * options.durationScale;
      const durationMs = Math.round(
        kind === 'destination_paused' ? Math.max(options.minPausedMs, scaled) : scaled,
      );
      const which = random.int(0, kind === 'http_429' ? 5 : 2);
      if (at + durationMs > options.endMs) return faults;
      faults.push({
        kind,
        atMs: Math.round(at),
        durationMs,
        target: targetOf(kind, which),
        which,
      });
    }
  }
}

/** How many of each kind a plan holds, every kind of `kinds` listed. */
export function countByKind(
  faults: readonly { readonly kind: FaultKind }[],
  kinds: readonly FaultKind[] = FAULT_KINDS,
): Record<string, number> {
  const counts: Record<string, number> = Object.fromEntries(kinds.map((kind) => [kind, 0]));
  for (const fault of faults) counts[fault.kind] = (counts[fault.kind] ?? 0) + 1;
  return counts;
}
