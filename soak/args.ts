import { parseArgs } from 'node:util';
import { CLUSTER_FAULT_KINDS, FAULT_KINDS, faultKindsFor, type FaultKind } from './fault-plan.js';
import type { Fsync } from './redis-server.js';

/**
 * `npm run soak [-- --minutes N --seed S --store local|s3 --report FILE]`, and the knobs a run
 * derives from its length. A short run (under 5 minutes: CI's) compresses more: a faster retry
 * schedule, shorter faults closer together, a tighter bound on the drain.
 */
export interface SoakOptions {
  readonly minutes: number;
  readonly seed: number;
  readonly store: 'local' | 's3';
  readonly report: string;
  readonly fsync: Fsync;
  /**
   * The service's Redis: one server, or a Cluster of three primaries with a replica each, the
   * queue in six shards and every delivery on a replica before its 2xx (redis-cluster.ts).
   */
  readonly redis: 'single' | 'cluster';
  /** Sends to the sandbox per second, on average. */
  readonly rate: number;
  /** The sandbox's --time-scale: its retry waits (30 s … 6 h) times this. */
  readonly timeScale: number;
  /** The longest wait for the backlog to drain after the last fault. */
  readonly drainSeconds: number;
  readonly faults: {
    readonly startMs: number;
    readonly meanGapMs: number;
    readonly durationScale: number;
    readonly minPausedMs: number;
    /** The kinds injected: every kind but those named by --without. */
    readonly kinds: readonly FaultKind[];
  };
  /** FORWARD_PROBE_SECONDS for a paused destination. */
  readonly probeSeconds: number;
}

export const USAGE =
  'usage: npm run soak [-- --minutes N --seed S --store local|s3 --report FILE --fsync always|everysec --redis single|cluster --rate R --time-scale X --drain-seconds N --without KIND[,KIND]]';

export class UsageError extends Error {}

/** A seed as given: a number is itself, any other text its FNV-1a hash. */
export function seedOf(text: string): number {
  if (/^\d{1,10}$/.test(text) && Number(text) <= 0xffffffff) return Number(text);
  let hash = 0x811c9dc5;
  for (const char of Buffer.from(text, 'utf8')) hash = Math.imul(hash ^ char, 0x01000193) >>> 0;
  return hash;
}

function positive(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0)
    throw new UsageError(`--${name} must be a positive number`);
  return value;
}

export function parseSoakArgs(argv: readonly string[], randomSeed: () => number): SoakOptions {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        minutes: { type: 'string' },
        seed: { type: 'string' },
        store: { type: 'string' },
        report: { type: 'string' },
        fsync: { type: 'string' },
        redis: { type: 'string' },
        rate: { type: 'string' },
        'time-scale': { type: 'string' },
        'drain-seconds': { type: 'string' },
        without: { type: 'string' },
      },
      strict: true,
    }));
  } catch (error: unknown) {
    throw new UsageError(error instanceof Error ? error.message : String(error), { cause: error });
  }
  const minutes = positive('minutes', values.minutes, 5);
  const store = values.store ?? 'local';
  if (store !== 'local' && store !== 's3') throw new UsageError('--store must be local or s3');
  const fsync = values.fsync ?? 'everysec';
  if (fsync !== 'always' && fsync !== 'everysec')
    throw new UsageError('--fsync must be always or everysec');
  const redis = values.redis ?? 'single';
  if (redis !== 'single' && redis !== 'cluster')
    throw new UsageError('--redis must be single or cluster');
  const known: readonly string[] = [...FAULT_KINDS, ...CLUSTER_FAULT_KINDS];
  const without = (values.without ?? '').split(',').filter((kind) => kind !== '');
  const unknown = without.filter((kind) => !known.includes(kind));
  if (unknown.length > 0)
    throw new UsageError(`--without: unknown fault ${unknown.join(', ')} (${known.join(', ')})`);
  const kinds = faultKindsFor(redis).filter((kind) => !without.includes(kind));
  const short = minutes < 5;
  return {
    minutes,
    seed: values.seed === undefined ? randomSeed() : seedOf(values.seed),
    store,
    report: values.report ?? 'data/soak-report.json',
    fsync,
    redis,
    rate: positive('rate', values.rate, 2.5),
    timeScale: positive('time-scale', values['time-scale'], short ? 0.002 : 0.01),
    drainSeconds: positive('drain-seconds', values['drain-seconds'], short ? 50 : 600),
    faults: short
      ? { startMs: 8_000, meanGapMs: 3_500, durationScale: 0.35, minPausedMs: 15_000, kinds }
      : { startMs: 20_000, meanGapMs: 12_000, durationScale: 1, minPausedMs: 45_000, kinds },
    probeSeconds: short ? 3 : 30,
  };
}
