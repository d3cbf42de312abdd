/**
 * The soak's one source of chance: mulberry32, a 32-bit seeded generator. Not fast-check's
 * generators: the schedule and the traffic are drawn once, in a known order, and must come out
 * the same for the same seed on any machine and any version of a library; a dozen lines that
 * never change do that. Not for cryptography; the bytes the CDN serves use AES-CTR (cdn-content.ts).
 */
export interface Random {
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [min, max], both included. */
  int(min: number, max: number): number;
  /** A float in [min, max). */
  between(min: number, max: number): number;
  /** True with probability `p`. */
  chance(p: number): boolean;
  /** One of `items` (not empty). */
  pick<T>(items: readonly T[]): T;
  /** One of `weights`' keys, each as likely as its weight. */
  weighted<K extends string>(weights: Readonly<Record<K, number>>): K;
  /** A copy of `items` in a random order (Fisher–Yates). */
  shuffle<T>(items: readonly T[]): T[];
  /** A wait drawn from an exponential distribution of this mean (Poisson arrivals). */
  exponential(mean: number): number;
  /** A new generator, seeded from this one: a stream of its own (traffic, faults) that later
   * draws of this one do not shift. */
  fork(): Random;
}

export function mulberry32(seed: number): Random {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const random: Random = {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    between: (min, max) => min + next() * (max - min),
    chance: (p) => next() < p,
    pick<T>(items: readonly T[]): T {
      const item = items[Math.floor(next() * items.length)];
      if (item === undefined) throw new Error('pick from an empty list');
      return item;
    },
    weighted<K extends string>(weights: Readonly<Record<K, number>>): K {
      const entries = Object.entries(weights) as [K, number][];
      const total = entries.reduce((sum, [, weight]) => sum + weight, 0);
      let left = next() * total;
      for (const [key, weight] of entries) {
        left -= weight;
        if (left < 0) return key;
      }
      const last = entries[entries.length - 1];
      if (last === undefined) throw new Error('weighted pick from no weights');
      return last[0];
    },
    shuffle<T>(items: readonly T[]): T[] {
      const copy = [...items];
      for (let i = copy.length - 1; i > 0; i -= 1) {
        const j = Math.floor(next() * (i + 1));
        [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
      }
      return copy;
    },
    exponential: (mean) => -mean * Math.log(1 - next()),
    fork: () => mulberry32(Math.floor(next() * 4294967296)),
  };
  return random;
}
