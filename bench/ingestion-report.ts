/**
 * The receiver's sections as printed, and their targets: per core against the empty route and
 * the naive receiver, latency at a constant rate against the naive receiver, all cores against one.
 */
import { ratio } from './lib.js';
import { NAMES, RECEIVER_NICE, ROUNDS, type Figures, type Ingestion } from './ingestion-section.js';
import { exact, pairedRatio, pairedText, type Section, type Target } from './section.js';

const same = (value: number) => value;

export function ingestionSections(ingest: Ingestion): Section<unknown>[] {
  const row = (name: string, r: Figures) =>
    `| ${name} | ${r.acceptedPerSecond} | ${r.perCpuSecond} | ${r.p50Ms} | ${r.p99Ms} | ${r.failed} | ${r.rounds.join(', ')} |`;
  const rateRow = (name: string, r: Figures) =>
    `| ${name} | ${r.acceptedPerSecond} | ${r.p50Ms} | ${r.p99Ms} | ${r.p999Ms} | ${r.failed} | ${r.rounds.join(', ')} |`;
  const { a, b, c, openLoop: open, cluster } = ingest;
  // Each round's own ratio, the kinds of a round seconds apart, and their median: a machine that
  // slows over the section moves both sides of each.
  const toEmpty = pairedRatio(a.rounds, b.rounds, same);
  const toNaive = pairedRatio(a.rounds, c.rounds, same);
  const p99 = pairedRatio(open.a.p99Rounds, open.c.p99Rounds, same);
  const p999 = pairedRatio(open.a.rounds, open.c.rounds, same);
  const perCore: Target[] = [
    [
      "per core: receiver ≥ 0.9 × the empty Express route (deliveries per CPU second of the serving process; the median of the rounds' own ratios)",
      toEmpty.median >= 0.9,
      `${pairedText(toEmpty)} (medians ${a.perCpuSecond} / ${b.perCpuSecond})`,
    ],
    [
      "per core: receiver ≥ 1.0 × naive (deliveries per CPU second of the serving process; the median of the rounds' own ratios)",
      toNaive.median >= 1,
      `${pairedText(toNaive)} (medians ${a.perCpuSecond} / ${c.perCpuSecond})`,
    ],
    [
      '0 lost of those answered 2xx',
      ingest.lost === 0,
      `${ingest.lost} of ${ingest.acceptedChecked}`,
    ],
  ];
  const latency: Target[] = [
    [
      `at ${open.rate}/s for ${open.seconds} s: receiver's p99 and p99.9 each ≤ the naive receiver's (the median of the rounds' own ratios)`,
      p99.median <= 1 && p999.median <= 1 && open.a.failed === 0,
      `p99 ${pairedText(p99)}, p99.9 ${pairedText(p999)} (medians p99 ${open.a.p99Ms} / ${open.c.p99Ms} ms, p99.9 ${open.a.p999Ms} / ${open.c.p999Ms} ms, p50 ${open.a.p50Ms} / ${open.c.p50Ms} ms), ${open.a.failed} failed`,
    ],
  ];
  const allCores: Target[] = [
    [
      `all cores: ${cluster.processes} processes ≥ 1 process`,
      cluster.many >= cluster.one,
      `${cluster.many} / ${cluster.one} per s = ${exact(cluster.many, cluster.one)}`,
    ],
  ];
  return [
    {
      title: `Ingestion (${ingest.connections} connections, ${ingest.seconds} s, unique signed audio.ready)`,
      figures: ingest,
      lines: [
        `Medians of ${ROUNDS.length} alternated rounds; the last column is each round's deliveries per CPU second.`,
        '',
        '| target (one process) | accepted/s | per CPU second | p50 ms | p99 ms | non-2xx + errors | rounds |',
        '|---|---|---|---|---|---|---|',
        row(NAMES.a, a),
        row(NAMES.b, b),
        row(NAMES.c, c),
        '',
        `a/b = ${ratio(a.acceptedPerSecond, b.acceptedPerSecond)}, a/c = ${ratio(a.acceptedPerSecond, c.acceptedPerSecond)}; per core a/c = ${ratio(a.perCpuSecond, c.perCpuSecond)}; answered 2xx and checked in Redis: ${ingest.acceptedChecked}, lost: ${ingest.lost}`,
      ],
      targets: perCore,
    },
    {
      title: `Latency at ${open.rate} deliveries/s for ${open.seconds} s (${open.connections} connections)`,
      figures: ingest,
      lines: [
        `Medians of ${open.a.rounds.length} alternated rounds, each on an emptied Redis with both receivers started afresh; the last column is each round's p99.9 in ms.`,
        '',
        '| target (one process) | accepted/s | p50 ms | p99 ms | p99.9 ms | non-2xx + errors | rounds |',
        '|---|---|---|---|---|---|---|',
        rateRow(NAMES.a, open.a),
        rateRow(NAMES.c, open.c),
      ],
      targets: latency,
    },
    {
      title: `All cores: WEB_CONCURRENCY=${cluster.processes} against 1`,
      figures: ingest,
      lines: [
        `${cluster.many}/s against ${cluster.one}/s (medians of the ingestion section's alternated rounds: ${cluster.rounds.many.join(', ')} against ${cluster.rounds.one.join(', ')}): ratio ${ratio(cluster.many, cluster.one)}; the whole machine (receivers at nice ${RECEIVER_NICE}, the load generator, Redis) was ${Math.round(cluster.busyWithOne * 100)} % busy in the one-process rounds, ${Math.round(cluster.busyWithMany * 100)} % with ${cluster.processes}`,
      ],
      targets: allCores,
    },
  ];
}
