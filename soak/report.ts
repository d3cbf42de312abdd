import type { Verdict } from './checker.js';
import type { InjectedFault } from './inject.js';
import type { LatencySummary } from './latency.js';

/**
 * The report of a run: docs/reliability.md's top-level numbers (`sent`, `ok`, `lost`, `unexpected`,
 * `duplicated`, `refused`, `in_flight`), the `seed` and `faults` (each with its `kind` and time),
 * then what explains them. A void run reports no figures: only why it is void.
 */
export interface ReportInput {
  readonly seed: number;
  readonly store: string;
  readonly fsync: string;
  readonly minutes: number;
  readonly startedAt: number;
  readonly endedAt: number;
  readonly verdict: Verdict;
  readonly faults: readonly InjectedFault[];
  readonly latency: { readonly no_fault: LatencySummary; readonly during_faults: LatencySummary };
  readonly drain: {
    readonly drained: boolean;
    readonly seconds_after_last_fault: number | null;
    readonly pending_at_cutoff: Readonly<Record<string, number>>;
  };
  readonly restarts: Readonly<Record<string, unknown>>;
  readonly extra: Readonly<Record<string, unknown>>;
}

const LISTED = 1_000;

export function buildReport(input: ReportInput): Record<string, unknown> {
  const { verdict } = input;
  const faultsByKind: Record<string, number> = {};
  for (const fault of input.faults) faultsByKind[fault.kind] = (faultsByKind[fault.kind] ?? 0) + 1;
  const faults = input.faults.map((fault) => ({
    kind: fault.kind,
    target: fault.target,
    at: new Date(fault.startMs).toISOString(),
    at_s: round((fault.startMs - input.startedAt) / 1000),
    duration_s: round((fault.endMs - fault.startMs) / 1000),
    ...fault.details,
  }));
  const common = {
    seed: input.seed,
    store: input.store,
    fsync: input.fsync,
    minutes: input.minutes,
    started_at: new Date(input.startedAt).toISOString(),
    duration_s: round((input.endedAt - input.startedAt) / 1000),
    void: verdict.void,
    faults,
    faults_by_kind: faultsByKind,
  };
  if (verdict.void) return { ...common, void_reasons: verdict.voidReasons, ...input.extra };
  return {
    ...common,
    sent: verdict.sent,
    ok: verdict.ok,
    lost: verdict.lost,
    unexpected: verdict.unexpected,
    duplicated: verdict.duplicated,
    refused: verdict.refused,
    in_flight: verdict.in_flight,
    refused_reasons: verdict.refusedReasons,
    latency: input.latency,
    drain: input.drain,
    restarts: input.restarts,
    lost_items: verdict.lostItems.slice(0, LISTED),
    unexpected_items: verdict.unexpectedItems.slice(0, LISTED),
    duplicated_items: verdict.duplicatedItems.slice(0, LISTED),
    ...input.extra,
  };
}

/** The report as lines for a terminal. */
export function reportLines(report: Record<string, unknown>): string[] {
  const lines = [
    `soak: seed ${String(report.seed)}, store ${String(report.store)}, fsync ${String(report.fsync)}, ${String(report.minutes)} min of traffic, ${String(report.duration_s)} s in all`,
  ];
  const byKind = report.faults_by_kind as Record<string, number>;
  lines.push(
    `faults: ${(report.faults as unknown[]).length} (${Object.entries(byKind)
      .map(([kind, n]) => `${kind} ${n}`)
      .join(', ')})`,
  );
  if (report.void === true) {
    lines.push(`VOID: ${(report.void_reasons as string[]).join('; ')}`);
    return lines;
  }
  lines.push(
    `sent ${String(report.sent)}: ok ${String(report.ok)}, lost ${String(report.lost)}, refused ${String(report.refused)}, in flight ${String(report.in_flight)}; unexpected ${String(report.unexpected)}, duplicated ${String(report.duplicated)}`,
  );
  const latency = report.latency as Record<string, LatencySummary>;
  for (const [name, summary] of Object.entries(latency))
    lines.push(
      `receiver answers, ${name.replace('_', ' ')}: ${summary.answered} answered (p50 ${String(summary.p50_ms)} ms, p99 ${String(summary.p99_ms)} ms, max ${String(summary.max_ms)} ms; ${JSON.stringify(summary.statuses)}), ${summary.unanswered} unanswered`,
    );
  const drain = report.drain as ReportInput['drain'];
  lines.push(
    `drain: ${drain.drained ? 'drained' : 'NOT drained'} ${String(drain.seconds_after_last_fault)} s after the last fault`,
  );
  lines.push(`restarts: ${JSON.stringify(report.restarts)}`);
  if (Object.keys(report.refused_reasons as object).length > 0)
    lines.push(`refused by reason: ${JSON.stringify(report.refused_reasons)}`);
  for (const item of (report.lost_items as Verdict['lostItems']).slice(0, 20))
    lines.push(`LOST ${item.event} ${JSON.stringify(item.id)}: missing ${item.missing.join(', ')}`);
  for (const item of (report.unexpected_items as Verdict['unexpectedItems']).slice(0, 20))
    lines.push(
      `UNEXPECTED at ${item.where}: ${item.event} ${JSON.stringify(item.id)} (${item.why})`,
    );
  return lines;
}

const round = (value: number) => Math.round(value * 10) / 10;
