import { FAULTS, type Fault } from '../src/sandbox/delivery/faults.js';
import { createIdSource } from './ids.js';
import type { Random } from './prng.js';

/**
 * The traffic of a run, drawn from the seed before it starts (pure: the same seed plans the same
 * sends, in the same order, at the same offsets). Each send is one request to the sandbox, which
 * then signs, sends and retries the deliveries it makes as the provider does.
 */

/** The sandbox's faults of a first attempt: its own list, so the two cannot drift apart. */
export const FIRST_ATTEMPT_FAULTS = FAULTS;
export type FirstAttemptFault = Fault;

/** The sandbox's voices; the filtered destination wants one of them. */
export const VOICES = ['alloy', 'ember', 'river', 'sage'] as const;
/** The event of the fork's own (soak/service-copy.ts defines it). */
export const CUSTOM_EVENT = 'voice.converted';

/** A file the soak's CDN serves: `/a/<n><ext>`, `size` bytes made from the seed and `n`. */
export interface CdnFile {
  readonly n: number;
  readonly ext: string;
  readonly size: number;
}

export type PlannedSend = { readonly atMs: number } & (
  | {
      readonly kind: 'ready' | 'custom';
      readonly id: string;
      readonly voice: string;
      readonly file: CdnFile;
      readonly fault?: FirstAttemptFault;
    }
  | {
      /** audio.ready padded to `overBy` bytes past MAX_BODY_BYTES (negative: under it). */
      readonly kind: 'big';
      readonly id: string;
      readonly voice: string;
      readonly file: CdnFile;
      readonly overBy: number;
      readonly padSeed: number;
    }
  | {
      readonly kind: 'failed';
      readonly id: string;
      readonly voice: string;
      readonly reason: string;
    }
  | {
      readonly kind: 'batch';
      readonly items: readonly {
        readonly id: string;
        readonly text: string;
        readonly voice: string;
      }[];
      readonly fail: readonly string[];
    }
  | { readonly kind: 'revoke' }
  /** The provider sends an earlier delivery again (same event and data): `of` is its index. */
  | { readonly kind: 'redeliver'; readonly of: number }
);

export interface TrafficOptions {
  readonly durationMs: number;
  /** Sends per second, on average (Poisson arrivals). */
  readonly rate: number;
  /** No over-the-limit send after this offset: its refusal must end before the cutoff. */
  readonly overLimitUntilMs: number;
}

const KIND_WEIGHTS = {
  ready: 0.42,
  custom: 0.1,
  failed: 0.1,
  batch: 0.06,
  revoke: 0.04,
  big: 0.05,
  redeliver: 0.08,
  over: 0.01,
} as const;

/** Sizes of several orders: a few bytes to a few megabytes (the mean about 190 KB). */
function drawSize(random: Random): number {
  switch (random.weighted({ tiny: 0.1, small: 0.5, medium: 0.35, large: 0.05 })) {
    case 'tiny':
      return random.int(1, 2_048);
    case 'small':
      return random.int(2_049, 65_536);
    case 'medium':
      return random.int(65_537, 524_288);
    case 'large':
      return random.int(524_289, 3_145_728);
  }
}

const EXTENSIONS = ['.mp3', '.wav', '.ogg', '.MP3', '', '.flac'] as const;

export function planTraffic(random: Random, options: TrafficOptions): PlannedSend[] {
  const nextId = createIdSource(random.fork());
  const sends: PlannedSend[] = [];
  let files = 0;
  const file = (): CdnFile => ({
    n: (files += 1),
    ext: random.pick(EXTENSIONS),
    size: drawSize(random),
  });
  /** Indexes of sends a re-delivery may repeat (one event each, sent through /sandbox/events). */
  const repeatable: number[] = [];
  for (let at = random.exponential(1000 / options.rate); at < options.durationMs;) {
    const atMs = Math.round(at);
    let kind = random.weighted(KIND_WEIGHTS);
    if (kind === 'redeliver' && repeatable.length === 0) kind = 'ready';
    if (kind === 'over' && atMs > options.overLimitUntilMs) kind = 'big';
    const voice = random.pick(VOICES);
    switch (kind) {
      case 'ready':
      case 'custom':
        repeatable.push(sends.length);
        sends.push({
          atMs,
          kind,
          id: nextId(),
          voice,
          file: file(),
          ...(random.chance(0.15) ? { fault: random.pick(FIRST_ATTEMPT_FAULTS) } : {}),
        });
        break;
      case 'big':
      case 'over':
        sends.push({
          atMs,
          kind: 'big',
          id: nextId(),
          voice,
          file: file(),
          overBy: kind === 'over' ? random.int(1, 64) : -random.int(0, 512),
          padSeed: random.int(0, 0x7fffffff),
        });
        break;
      case 'failed':
        repeatable.push(sends.length);
        sends.push({ atMs, kind, id: nextId(), voice, reason: `soak: synthesis failed ${atMs}` });
        break;
      case 'batch': {
        const items = Array.from({ length: random.int(1, 5) }, () => ({
          id: nextId(),
          text: `soak batch text ${random.int(0, 1_000_000)} ${'la '.repeat(random.int(0, 40))}`,
          voice: random.pick(VOICES),
        }));
        sends.push({
          atMs,
          kind,
          items,
          fail: items.filter(() => random.chance(0.2)).map((item) => item.id),
        });
        break;
      }
      case 'revoke':
        sends.push({ atMs, kind });
        break;
      case 'redeliver':
        sends.push({ atMs, kind, of: random.pick(repeatable) });
        break;
    }
    at += random.exponential(1000 / options.rate);
  }
  return sends;
}
