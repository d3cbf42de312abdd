import { spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { archivedEntries } from '../harness/archive-entries.js';
import { freePort } from '../harness/private-redis.js';
import type { LocalCdn } from '../harness/local-cdn.js';
import {
  cpuSecondsOf,
  postDeliveries,
  spawnWholeService,
  stop,
  watchSettledJobs,
  type NaiveWorker,
} from './lib.js';

/** Audio files, metadata files and archive entries, each counted apart. */
export interface StoredCounts {
  readonly audio: number;
  readonly metadata: number;
  readonly archive: number;
}

export interface EndToEndResult {
  readonly deliveries: number;
  readonly duplicates: number;
  readonly seconds: number;
  /** When the last POST was answered. */
  readonly postedSeconds: number;
  /** CPU time (user + system) of the receiver and of the worker process over the run. */
  readonly receiverCpuSeconds: number;
  readonly workerCpuSeconds: number;
  readonly audioFiles: number;
  readonly metadataFiles: number;
  /** Entries in the archive (`.archive/`, for replay): one per accepted delivery. */
  readonly archiveEntries: number;
  /** The worker's CPU time per stored item, ms. */
  readonly workerCpuMsPerItem: number;
  readonly cdnDownloads: number;
  readonly failedJobs: number;
  readonly non2xx: number;
}

/**
 * 10,000 audio.ready deliveries, every tenth a re-delivery of an earlier one, posted at 50 at a
 * time to the service (a receiver and a worker process, as docker-compose.yml runs them), against
 * the local HTTPS CDN serving 64 KB files. Timed from the first POST until the last job completed;
 * then files and CDN hits are counted.
 */
export interface EndToEndOptions {
  /** @defaultValue 10,000 */
  readonly total?: number;
  /** @defaultValue the service's default (8) */
  readonly workerConcurrency?: number;
  /** More settings for both processes (AUDIO_STORE=s3 and its S3_* for the bucket). */
  readonly env?: Record<string, string>;
  /** What was stored, when not in the run's AUDIO_DIR (a bucket). */
  readonly countStored?: () => Promise<StoredCounts>;
  /** A naive worker (bench/baselines/) instead of the service's: into files, or into S3. */
  readonly naiveWorker?: NaiveWorker;
  /**
   * What else must have happened before the run counts as done, given the distinct items
   * (forwarding: each item's message at every destination). @defaultValue nothing
   */
  readonly settledWhen?: (items: number) => Promise<void>;
}

export async function runEndToEnd(
  redisUrl: string,
  cdn: LocalCdn,
  options: EndToEndOptions = {},
): Promise<EndToEndResult> {
  const total = options.total ?? 10_000;
  const audio = randomBytes(64 * 1024);
  let cdnDownloads = 0;
  cdn.fallback((_req, res) => {
    cdnDownloads++;
    res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': audio.length }).end(audio);
  });
  const audioDir = mkdtempSync(join(tmpdir(), 'aw-bench-e2e-'));
  const caFile = join(audioDir, '..', `aw-bench-ca-${randomUUID()}.pem`);
  writeFileSync(caFile, cdn.ca);
  const prefix = `bench-e2e-${randomUUID().slice(0, 8)}`;
  const port = await freePort();
  const settings = {
    CDN_URL: cdn.origin,
    NODE_EXTRA_CA_CERTS: caFile,
    ...(options.workerConcurrency === undefined
      ? {}
      : { WORKER_CONCURRENCY: String(options.workerConcurrency) }),
    ...options.env,
  };
  const naive = options.naiveWorker;
  const service = await spawnWholeService(
    port,
    redisUrl,
    prefix,
    audioDir,
    naive === undefined ? settings : { ...settings, CDN_CA: cdn.ca },
    naive,
  );

  const ids: string[] = [];
  const sent = Array.from({ length: total }, (_, i) => {
    const id = i % 10 === 9 ? (ids[Math.floor(ids.length / 2)] ?? randomUUID()) : randomUUID();
    if (i % 10 !== 9) ids.push(id);
    return id;
  });
  const unique = ids.length;

  const jobs = await watchSettledJobs(redisUrl, prefix, unique);

  process.stderr.write(
    `end to end: ${total} deliveries (${total - unique} duplicates), 64 KB files\n`,
  );
  const cpuBefore = new Map(service.map((child) => [child, cpuSecondsOf(child.pid)]));
  const started = performance.now();
  const non2xx = await postDeliveries(port, sent, cdn.origin);
  const postedSeconds = (performance.now() - started) / 1000;
  await jobs.done;
  await options.settledWhen?.(unique);
  const seconds = (performance.now() - started) / 1000;
  const [receiverCpu, workerCpu] = service.map(
    (child) => cpuSecondsOf(child.pid) - (cpuBefore.get(child) ?? 0),
  );
  await jobs.close();
  await Promise.all(service.map(stop));

  const stored = (await options.countStored?.()) ?? countFiles(audioDir);
  // Gone, and the removal on disk, before the next run: their dirty pages, and the removal's
  // journal (and its discards, on a disk mounted with `discard`) would otherwise land in its timing.
  rmSync(audioDir, { recursive: true, force: true });
  rmSync(caFile, { force: true });
  spawnSync('sync');
  process.stderr.write(
    `  ${stored.audio} items in ${Math.round(seconds * 10) / 10} s (${Math.round(stored.audio / seconds)} items/s), worker CPU ${Math.round(((workerCpu ?? 0) / stored.audio) * 100000) / 100} ms per item, ${jobs.failed()} failed jobs\n`,
  );
  return {
    deliveries: total,
    duplicates: total - unique,
    seconds: Math.round(seconds * 100) / 100,
    postedSeconds: Math.round(postedSeconds * 100) / 100,
    receiverCpuSeconds: Math.round((receiverCpu ?? 0) * 100) / 100,
    workerCpuSeconds: Math.round((workerCpu ?? 0) * 100) / 100,
    audioFiles: stored.audio,
    metadataFiles: stored.metadata,
    archiveEntries: stored.archive,
    workerCpuMsPerItem: Math.round(((workerCpu ?? 0) / stored.audio) * 1000 * 100) / 100,
    cdnDownloads,
    failedJobs: jobs.failed(),
    non2xx,
  };
}

/** A run's stored items per second, rounded. */
export const perSecond = (run: EndToEndResult) => Math.round(run.audioFiles / run.seconds);

/** The store's top level holds the items' files; the archive's entries are under `.archive/`. */
function countFiles(audioDir: string): StoredCounts {
  const top = readdirSync(audioDir);
  return {
    audio: top.filter((f) => f.endsWith('.mp3')).length,
    metadata: top.filter((f) => f.endsWith('.json')).length,
    archive: archivedEntries(join(audioDir, '.archive')).length,
  };
}

/** WORKER_CONCURRENCY values the bench tries, and how many deliveries it times each with. */
export const CONCURRENCY_CANDIDATES = [8, 16, 32, 64, 128] as const;

/**
 * WORKER_CONCURRENCY from a measurement: the same end to end run, smaller, at each candidate;
 * the fastest wins (the smaller one on a tie within 5 %, since each slot holds a connection and
 * two buffers).
 */
export async function sweepConcurrency(
  redisUrl: string,
  cdn: LocalCdn,
  total = 4000,
  /**
   * Done before each run (an emptied Redis, a new bucket); gives the run's store when it is not
   * the local one (S3's settings and a count of its own bucket). @defaultValue nothing: local
   */
  prepare?: () => Promise<Pick<EndToEndOptions, 'env' | 'countStored'>>,
) {
  const runs: { concurrency: number; seconds: number; filesPerSecond: number }[] = [];
  for (const concurrency of CONCURRENCY_CANDIDATES) {
    const store = await prepare?.();
    process.stderr.write(`WORKER_CONCURRENCY=${concurrency}: `);
    const run = await runEndToEnd(redisUrl, cdn, {
      total,
      workerConcurrency: concurrency,
      ...store,
    });
    runs.push({
      concurrency,
      seconds: run.seconds,
      filesPerSecond: perSecond(run),
    });
  }
  const fastest = Math.min(...runs.map((r) => r.seconds));
  const best = runs.find((r) => r.seconds <= fastest * 1.05) ?? runs[0];
  return { deliveries: total, runs, best: best?.concurrency ?? 8 };
}
