/**
 * The receiver's answer times as the sender saw them (each attempt the sandbox logged: when it
 * was sent, how long the answer took), split by whether a fault was active during the attempt.
 * Pure.
 */
export interface TimedAttempt {
  /** Epoch ms the attempt was sent. */
  readonly at: number;
  readonly ms: number;
  /** The HTTP status; absent when no answer came (refused connection, timeout). */
  readonly status?: number;
}

export interface Window {
  readonly startMs: number;
  readonly endMs: number;
}

export interface LatencySummary {
  /** Attempts answered with a status. */
  readonly answered: number;
  /** Attempts that got no answer at all. */
  readonly unanswered: number;
  readonly p50_ms: number | null;
  readonly p99_ms: number | null;
  readonly max_ms: number | null;
  /** Answers by status class: `2xx`, `4xx`, `5xx`. */
  readonly statuses: Readonly<Record<string, number>>;
}

/** Nearest-rank percentile of sorted values. */
export function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] ?? null;
}

function summarise(attempts: readonly TimedAttempt[]): LatencySummary {
  const answered = attempts.filter((a) => a.status !== undefined);
  const sorted = answered.map((a) => a.ms).sort((a, b) => a - b);
  const statuses: Record<string, number> = {};
  for (const attempt of answered) {
    const bucket = `${Math.floor((attempt.status ?? 0) / 100)}xx`;
    statuses[bucket] = (statuses[bucket] ?? 0) + 1;
  }
  return {
    answered: answered.length,
    unanswered: attempts.length - answered.length,
    p50_ms: percentile(sorted, 50),
    p99_ms: percentile(sorted, 99),
    max_ms: sorted[sorted.length - 1] ?? null,
    statuses,
  };
}

/** An attempt is "during faults" when its [at, at + ms] meets any fault's window. */
export function splitLatency(
  attempts: readonly TimedAttempt[],
  windows: readonly Window[],
): { readonly no_fault: LatencySummary; readonly during_faults: LatencySummary } {
  const during = (a: TimedAttempt) =>
    windows.some((w) => a.at <= w.endMs && a.at + a.ms >= w.startMs);
  return {
    no_fault: summarise(attempts.filter((a) => !during(a))),
    during_faults: summarise(attempts.filter(during)),
  };
}
