/**
 * The archive's price on the receiver, and replay's time and memory over a busy hour.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { archivedEntries } from '../harness/archive-entries.js';
import { freePort } from '../harness/private-redis.js';
import { runArchiveQueries, type ArchiveQueriesResult } from './archive-queries.js';
import { measure } from './ingestion-section.js';
import { alternated, medianBy, ratio, spawnService, stop } from './lib.js';
import { exact, type Section } from './section.js';

/**
 * The archive's price on the receiver (#20): its per-core figure with a worker beside it that
 * archives every delivery it takes (ARCHIVE_RETENTION_HOURS=168, the default) against the same
 * pair with the archive off, in the same run. The worker's CDN_URL admits none of the bench's
 * audio URLs, so each job is its archive write and a quick refusal: the archive is most of what
 * the worker does, and the workers keep pace with the receiver.
 */
export async function archiveCost(redisUrl: string) {
  const run = async (retention: string) => {
    const port = await freePort();
    const audioDir = mkdtempSync(join(tmpdir(), 'aw-bench-archive-'));
    const common = {
      REDIS_URL: redisUrl,
      QUEUE_PREFIX: `bench-archive-${retention}`,
      LOG_LEVEL: 'warn',
      AUDIO_DIR: audioDir,
      ARCHIVE_RETENTION_HOURS: retention,
      CDN_URL: 'https://audio.invalid',
    };
    const receiver = await spawnService({
      ...common,
      PORT: String(port),
      ROLE: 'web',
      WEB_CONCURRENCY: '1',
    });
    const worker = await spawnService({
      ...common,
      ROLE: 'worker',
      WORKER_HEALTH_PORT: String(await freePort()),
    });
    try {
      const measured = await measure(
        `receiver + worker, ARCHIVE_RETENTION_HOURS=${retention}`,
        `http://127.0.0.1:${port}/webhooks`,
        receiver.pid,
      );
      const archived = archivedEntries(join(audioDir, '.archive')).length;
      return { ...measured, archived };
    } finally {
      await stop(receiver);
      await stop(worker);
      rmSync(audioDir, { recursive: true, force: true });
    }
  };
  // Alternated, three times each, and the median taken: on two shared cores the same setting's
  // figure moves by about 10 % from one run to the next (the worker competes for the CPU), and
  // the first run on a fresh Redis and a cold machine is not the second.
  const rounds = await alternated({ '0': () => run('0'), '168': () => run('168') }, [
    ['0', '168'],
    ['0', '168'],
    ['0', '168'],
  ]);
  const median = (retention: '0' | '168', pick: (r: Awaited<ReturnType<typeof run>>) => number) =>
    medianBy(rounds[retention].map(pick), (value) => value) ?? 0;
  const onPerCpuSecond = median('168', (r) => r.perCpuSecond);
  const offPerCpuSecond = median('0', (r) => r.perCpuSecond);
  return {
    runs: rounds['0'].flatMap((off, i) => [
      `0 h: ${off.perCpuSecond}`,
      `168 h: ${rounds['168'][i]?.perCpuSecond}`,
    ]),
    offPerCpuSecond,
    onPerCpuSecond,
    offPerSecond: median('0', (r) => r.acceptedPerSecond),
    onPerSecond: median('168', (r) => r.acceptedPerSecond),
    archived: median('168', (r) => r.archived),
    archivedWhenOff: median('0', (r) => r.archived),
    ratio: ratio(onPerCpuSecond, offPerCpuSecond),
  };
}

export function archiveLine(cost: Awaited<ReturnType<typeof archiveCost>>): string {
  return `receiver per CPU second with a worker archiving every delivery it takes: ${cost.onPerCpuSecond} (${cost.onPerSecond}/s; ${cost.archived} archive entries written per run) against ${cost.offPerCpuSecond} with ARCHIVE_RETENTION_HOURS=0 (${cost.offPerSecond}/s; ${cost.archivedWhenOff} written), medians of three alternated runs each (${cost.runs.join(', ')}): ratio ${cost.ratio}`;
}

export function archiveQueriesLine(q: ArchiveQueriesResult): string {
  return `replay over ${q.entries} deliveries archived in one hour: \`replay --id\` ${q.byId.seconds} s, peak RSS ${q.byId.peakRssMb} MB (${q.byId.growthMb} MB above the same command on an empty archive); a dry run of the hour (${q.hourDryRun.listed} listed) ${q.hourDryRun.seconds} s, peak RSS ${q.hourDryRun.peakRssMb} MB (${q.hourDryRun.growthMb} MB above)`;
}

/** The archive section: the price on the receiver (a target) and replay over a busy hour. */
export async function runArchiveSection(redisUrl: string): Promise<Section<unknown>> {
  const cost = await archiveCost(redisUrl);
  const queries = await runArchiveQueries();
  return {
    title: 'The archive (replay)',
    figures: { cost, queries },
    lines: [archiveLine(cost), '', archiveQueriesLine(queries)],
    targets: [
      [
        // The route does nothing more with the archive on: what remains is the worker's share
        // of two shared cores, and the figure's run-to-run spread (about 10 %).
        'the archive on: receiver per core ≥ 0.9 × the archive off',
        cost.onPerCpuSecond >= 0.9 * cost.offPerCpuSecond,
        `${exact(cost.onPerCpuSecond, cost.offPerCpuSecond)} (${cost.onPerCpuSecond} / ${cost.offPerCpuSecond}; ${cost.archived} archived)`,
      ],
    ],
  };
}
