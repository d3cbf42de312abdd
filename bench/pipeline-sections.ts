/**
 * The sections after ingestion, each run and printed with its targets: end to end (with where a
 * file's time goes), through the sandbox, the provider client, forwarding, capacity.
 */
import { SETTINGS } from '../src/settings.js';
import type { LocalCdn } from '../harness/local-cdn.js';
import { runBreakdown } from './breakdown.js';
import { capacityLines, runCapacity } from './capacity.js';
import { runEndToEnd, sweepConcurrency } from './end-to-end.js';
import { forwardingLine, runForwarding } from './forwarding.js';
import { runLimiterCost, runRevocationStaleness, runUtilisation } from './limiter.js';
import { footprintTargets, runRedisFootprint } from './redis-footprint.js';
import { runSandboxEndToEnd } from './sandbox-end-to-end.js';
import { pairedText, type Section } from './section.js';

/** WORKER_CONCURRENCY's default (docs/configuration.md's). */
const DEFAULT_WORKER_CONCURRENCY = Number(SETTINGS.WORKER_CONCURRENCY.default);

/** WORKER_CONCURRENCY swept, one end-to-end run at the fastest, and where a file's time goes. */
export async function runEndToEndSection(redisUrl: string, cdn: LocalCdn) {
  const concurrency = await sweepConcurrency(redisUrl, cdn);
  const e = await runEndToEnd(redisUrl, cdn, { workerConcurrency: concurrency.best });
  // At the contract's default, where a job's time is its own; at the fastest, where much of
  // it is waiting for the CPU and the thread pool, which the other jobs keep busy.
  const breakdown = [
    await runBreakdown(redisUrl, cdn, DEFAULT_WORKER_CONCURRENCY),
    await runBreakdown(redisUrl, cdn, concurrency.best),
  ];
  const section: Section<unknown> = {
    title: 'End to end',
    figures: { concurrency, endToEnd: e, breakdown },
    lines: [
      `WORKER_CONCURRENCY measured with ${concurrency.deliveries} deliveries each: ${concurrency.runs.map((r) => `${r.concurrency} → ${r.seconds} s (${r.filesPerSecond} files/s)`).join(', ')}; fastest: ${concurrency.best}`,
      '',
      `${e.deliveries} deliveries (${e.duplicates} duplicates) → ${e.audioFiles} audio files, ${e.metadataFiles} metadata files, ${e.cdnDownloads} CDN downloads, ${e.failedJobs} failed jobs, ${e.non2xx} non-2xx, in ${e.seconds} s (${Math.round(e.audioFiles / e.seconds)} files/s; every POST answered after ${e.postedSeconds} s; CPU: receiver ${e.receiverCpuSeconds} s, worker ${e.workerCpuSeconds} s)`,
      '',
      `Where a file's time goes (traced runs of ${breakdown.map((b) => b.jobs).join(' and ')} jobs; mean wall time per job, ms):`,
      '',
      `| part | ${breakdown.map((b) => `WORKER_CONCURRENCY=${b.workerConcurrency}`).join(' | ')} |`,
      `|---|${breakdown.map(() => '---').join('|')}|`,
      ...(breakdown[0]?.parts ?? []).map(
        (p, i) =>
          `| ${p.part} | ${breakdown.map((b) => `${b.parts[i]?.ms ?? NaN} (${Math.round(((b.parts[i]?.ms ?? NaN) / b.jobMs) * 100)} %)`).join(' | ')} |`,
      ),
      `| the whole job | ${breakdown.map((b) => b.jobMs).join(' | ')} |`,
    ],
    targets: [
      [
        'end to end: 9,000 audio files, 9,000 metadata files, 9,000 archive entries, 9,000 CDN downloads',
        e.audioFiles === 9000 &&
          e.metadataFiles === 9000 &&
          e.archiveEntries === 9000 &&
          e.cdnDownloads === 9000,
        `${e.audioFiles} / ${e.metadataFiles} / ${e.archiveEntries} / ${e.cdnDownloads}`,
      ],
    ],
  };
  return { section, best: concurrency.best };
}

export async function runSandboxSection(redisUrl: string): Promise<Section<unknown>> {
  const s = await runSandboxEndToEnd(redisUrl);
  return {
    title: 'Through the sandbox',
    figures: s,
    lines: [
      `${s.items} items (${Math.round(s.wavBytes / 1024)} KB WAVs) from batch submission to every file and metadata on disk: ${s.seconds} s (${s.itemsPerSecond} items/s; the sandbox answered the batch after ${s.submitSeconds} s and had every delivery answered 2xx after ${s.deliveredSeconds} s); ${s.audioFiles} audio files, ${s.metadataFiles} metadata files, ${s.failedJobs} failed jobs; ${s.attemptsPerDelivery} delivery attempts per delivery (ideal 1.00), ${s.notDelivered} not delivered`,
    ],
    targets: [
      [
        'through the sandbox: 10,000 files + metadata, every delivery delivered',
        s.audioFiles === 10_000 && s.metadataFiles === 10_000 && s.notDelivered === 0,
        `${s.audioFiles} / ${s.metadataFiles}, ${s.notDelivered} not delivered`,
      ],
      [
        'through the sandbox: 1.00 attempts per delivery',
        s.attemptsPerDelivery === 1,
        `${s.attemptsPerDelivery}`,
      ],
    ],
  };
}

export async function runProviderClientSection(redisUrl: string): Promise<Section<unknown>> {
  const limiter = await runLimiterCost(redisUrl);
  const u = await runUtilisation(redisUrl);
  const revocation = await runRevocationStaleness(redisUrl);
  const share = `${Math.round(u.utilisation * 1000) / 10} %`;
  return {
    title: 'The provider client',
    figures: { limiter, utilisation: u, revocation },
    lines: [
      `limiter: ${limiter.singleProcessPerSecond} admissions/s in one process (${limiter.singleProcessMicros} µs each), ${limiter.fourProcessesPerSecond}/s across 4 processes sharing Redis (${limiter.fourProcessesMicros} µs each); utilisation against the sandbox: ${u.perWindow.join(', ')} of ${u.limit} per ${u.windowMs} ms window (${share}), ${u.tooManyRequests} × 429; a revocation reaches another process's key pool in ${revocation.medianMicros} µs (median of ${revocation.samples}; max ${revocation.maxMicros} µs)`,
    ],
    targets: [
      [
        'client utilisation ≥ 98 % of the limit over 5 windows, zero 429s',
        u.utilisation >= 0.98 && u.tooManyRequests === 0,
        `${share} (${u.perWindow.join(', ')} per window), ${u.tooManyRequests} × 429`,
      ],
    ],
  };
}

export async function runForwardingSection(
  redisUrl: string,
  cdn: LocalCdn,
  workerConcurrency: number,
  fresh: () => Promise<void>,
): Promise<Section<unknown>> {
  const f = await runForwarding(redisUrl, cdn, workerConcurrency, fresh);
  return {
    title: 'Forwarding',
    figures: f,
    lines: [forwardingLine(f)],
    targets: [
      [
        'forwarding to three destinations: every item at each of them (its price is in its section)',
        f.three.received.every((count) => count === f.items),
        `${f.three.received.join(' / ')} of ${f.items}; ${f.ratio.median.toFixed(2)} × the items/s without`,
      ],
      [
        'forwarding every delivery to three destinations ≥ 0.75 × the items/s without forwarding',
        f.ratio.median >= 0.75,
        `${pairedText(f.ratio)} (medians ${f.three.itemsPerSecond} / ${f.none.itemsPerSecond} items/s); with filters ${f.filterRatio} × without them`,
      ],
    ],
  };
}

/** The capacity model's figures and the Redis bytes a delivery leaves (docs/capacity.md). */
export async function runCapacitySection(
  redisUrl: string,
  cdn: LocalCdn,
): Promise<Section<unknown>> {
  const capacity = await runCapacity(cdn);
  const footprint = await runRedisFootprint(redisUrl);
  return {
    title: 'Capacity (docs/capacity.md)',
    figures: { capacity, footprint },
    lines: capacityLines(capacity),
    targets: footprintTargets(footprint),
  };
}
