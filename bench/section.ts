/**
 * What each bench section returns: its figures (for bench/results.json), the lines it prints
 * under its heading, and its targets, each PASS or FAIL with the figures it compared.
 */
export type Target = readonly [name: string, pass: boolean, value: string];

export interface Section<Figures> {
  readonly title: string;
  readonly figures: Figures;
  readonly lines: readonly string[];
  readonly targets: readonly Target[];
}

/** A section as printed: its heading and lines. */
export function printed(section: Section<unknown>): string {
  return [`## ${section.title}`, '', ...section.lines, ''].join('\n');
}

/** Targets as printed, one line each. */
export function targetLines(targets: readonly Target[]): string[] {
  return targets.map(([name, pass, value]) => `${pass ? 'PASS' : 'FAIL'}  ${name}: ${value}`);
}

/**
 * A target's ratio to three decimals. Targets compare the figures themselves, never a rounded
 * ratio: a ratio of 0.596 prints as 0.6 and would pass "≥ 0.6".
 */
export function exact(a: number, b: number): string {
  return b === 0 ? 'n/a' : (a / b).toFixed(3);
}

/** Items stored per second, unrounded. */
export function rate(run: { readonly audioFiles: number; readonly seconds: number }): number {
  return run.audioFiles / run.seconds;
}

/** The median of each numeric field over rounds (the upper one of an even count). */
export function medians<T extends object>(
  rounds: readonly T[],
  keys: readonly (keyof T & string)[],
): Partial<Record<keyof T & string, number>> {
  return Object.fromEntries(
    keys.map((key): [string, number] => {
      const sorted = rounds.map((round) => Number(round[key])).sort((a, b) => a - b);
      return [key, sorted[Math.floor(sorted.length / 2)] ?? NaN];
    }),
  ) as Partial<Record<keyof T & string, number>>;
}

/**
 * Each round's ratio, to three decimals, in the order run, and their median, unrounded (the upper
 * one of an even count, as `medians`).
 */
export interface PairedRatio {
  readonly median: number;
  readonly rounds: readonly number[];
}

/**
 * `value` of each round's run of `ours` over that of the same round's `baseline` (minutes apart):
 * a machine that slows or speeds up over a section moves both sides of each round's ratio.
 */
export function pairedRatio<Run>(
  ours: readonly Run[],
  baseline: readonly Run[],
  value: (run: Run) => number,
): PairedRatio {
  if (ours.length !== baseline.length)
    throw new Error(`${ours.length} rounds against ${baseline.length} of the baseline`);
  const ratios = ours.map((run, i) => value(run) / value(baseline[i] as Run));
  return {
    // A round with no figure leaves no median: a target then fails rather than pass on the rest.
    median: ratios.some(Number.isNaN)
      ? NaN
      : (medians(
          ratios.map((r) => ({ r })),
          ['r'],
        ).r ?? NaN),
    rounds: ratios.map((r) => Math.round(r * 1000) / 1000),
  };
}

/** A paired ratio as a target prints it: the median of the rounds', then each round's. */
export function pairedText(r: PairedRatio): string {
  return `${r.median.toFixed(3)} (rounds ${r.rounds.join(', ')})`;
}
