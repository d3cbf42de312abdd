/**
 * npm run bench: every section against baselines of the same run. Everything runs on this machine
 * against a private Redis (append-only, fsync every second, as in docker-compose.yml) and a local
 * HTTPS CDN; all traffic stays on loopback. Prints each section, then every target PASS or FAIL,
 * and writes the same figures to bench/results.json. It never fails a build: its exit code is 0
 * whatever the figures, 1 only when it could not run.
 *
 * `npm run bench -- --<section>` runs one section alone and prints it with its targets, but
 * writes no bench/results.json: --ingestion, --downloads, --stores, --archive, --forwarding,
 * --capacity, --shards, --inspector.
 */
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { startLocalCdn, type LocalCdn } from '../harness/local-cdn.js';
import { startPrivateRedis, type PrivateRedis } from '../harness/private-redis.js';
import { runArchiveSection } from './archive-cost.js';
import { runDownloads } from './downloads.js';
import { inspectorTargets, runInspector } from './inspector.js';
import { ingestionSections } from './ingestion-report.js';
import { runIngestion } from './ingestion-section.js';
import { runReplicaWait } from './replica-wait.js';
import { runShardsSection } from './shards.js';
import { freshRedis } from './lib.js';
import {
  runCapacitySection,
  runEndToEndSection,
  runForwardingSection,
  runProviderClientSection,
  runSandboxSection,
} from './pipeline-sections.js';
import { printed, targetLines, type Section } from './section.js';
import { downloadsSection, storesSection } from './stores-report.js';
import { runStores } from './stores.js';
import { quietSdkNodeNotice } from '../src/storage/s3/s3-client.js';

/** WORKER_CONCURRENCY for a section run alone, without the sweep: the fastest of most sweeps. */
const DEFAULT_CONCURRENCY = 64;

interface Bench {
  readonly redisServer: PrivateRedis;
  readonly redis: Redis;
  readonly cdn: LocalCdn;
}

/** Runs `fn` with a private Redis and a local CDN, and stops both whatever happens. */
async function withBench<T>(fn: (bench: Bench) => Promise<T>): Promise<T> {
  const redisServer = await startPrivateRedis({ persistent: true });
  const redis = new Redis(redisServer.url);
  const cdn = await startLocalCdn().catch(async (error: unknown) => {
    redis.disconnect();
    await redisServer.stop();
    throw error;
  });
  try {
    return await fn({ redisServer, redis, cdn });
  } finally {
    await cdn.close();
    redis.disconnect();
    await redisServer.stop();
  }
}

const downloadsAndStores = async ({ redisServer, redis, cdn }: Bench, concurrency: number) => {
  const downloads = await runDownloads(cdn);
  const stores = await runStores(redisServer.url, cdn, concurrency, () => freshRedis(redis));
  return [downloadsSection(downloads), storesSection(stores, downloads)];
};

/** Finding one delivery among a million (its own private Redis). */
async function runInspectorSection(): Promise<Section<unknown>> {
  const figures = await runInspector();
  return {
    title: 'The delivery inspector',
    figures,
    lines: [],
    targets: inspectorTargets(figures),
  };
}

/** The sections that run alone, by their flag. */
const ALONE: Record<string, (bench: Bench) => Promise<Section<unknown>[]>> = {
  '--ingestion': async ({ redisServer, redis }) => [
    ...ingestionSections(await runIngestion(redisServer.url, redis)),
    await runReplicaWait(redisServer),
  ],
  '--downloads': async ({ cdn }) => [downloadsSection(await runDownloads(cdn))],
  '--stores': (bench) => downloadsAndStores(bench, DEFAULT_CONCURRENCY),
  '--archive': async ({ redisServer }) => [await runArchiveSection(redisServer.url)],
  '--forwarding': async ({ redisServer, redis, cdn }) => [
    await runForwardingSection(redisServer.url, cdn, DEFAULT_CONCURRENCY, () => freshRedis(redis)),
  ],
  '--capacity': async ({ redisServer, cdn }) => [await runCapacitySection(redisServer.url, cdn)],
  '--shards': async ({ cdn }) => [await runShardsSection(cdn.origin)],
  '--inspector': async () => [await runInspectorSection()],
};

/** Every section, in an order where each starts on a Redis the one before left clean enough. */
async function everySection(bench: Bench): Promise<Section<unknown>[]> {
  const { redisServer, redis, cdn } = bench;
  const sections = ingestionSections(await runIngestion(redisServer.url, redis));
  // Ingestion leaves a few hundred thousand waiting jobs: the runs that follow would pay for
  // their append-only file (its rewrites fork and write the whole data set) and compare worse
  // than the same runs on their own.
  await freshRedis(redis);
  const endToEnd = await runEndToEndSection(redisServer.url, cdn);
  sections.push(endToEnd.section, ...(await downloadsAndStores(bench, endToEnd.best)));
  sections.push(await runSandboxSection(redisServer.url));
  sections.push(await runProviderClientSection(redisServer.url));
  sections.push(await runReplicaWait(redisServer));
  sections.push(await runArchiveSection(redisServer.url));
  sections.push(
    await runForwardingSection(redisServer.url, cdn, endToEnd.best, () => freshRedis(redis)),
  );
  sections.push(await runCapacitySection(redisServer.url, cdn));
  sections.push(await runShardsSection(cdn.origin));
  sections.push(await runInspectorSection());
  return sections;
}

function report(sections: readonly Section<unknown>[]): string {
  const targets = sections.flatMap((section) => section.targets);
  const failed = targets.filter(([, pass]) => !pass).length;
  return [
    ...sections.map(printed),
    '## Targets',
    '',
    ...targetLines(targets),
    '',
    `${targets.length - failed} of ${targets.length} targets PASS`,
    '',
  ].join('\n');
}

async function main(): Promise<void> {
  // The AWS SDK's several-line notice on Node < 22, at the bench's first S3 client and in every
  // process that inherits this environment, is not a figure.
  quietSdkNodeNotice();
  const alone = Object.keys(ALONE).filter((flag) => process.argv.includes(flag));
  if (alone.length > 0) {
    for (const flag of alone) {
      const sections = await withBench((bench) =>
        (ALONE[flag] as (b: Bench) => Promise<Section<unknown>[]>)(bench),
      );
      process.stdout.write(report(sections));
    }
    return;
  }
  const sections = await withBench(everySection);
  const results = {
    date: new Date().toISOString(),
    machine: { node: process.version, cpus: cpus().length, cpu: cpus()[0]?.model ?? 'unknown' },
    sections: Object.fromEntries(sections.map((section) => [section.title, section.figures])),
    targets: sections
      .flatMap((section) => section.targets)
      .map(([name, pass, value]) => ({ name, pass, value })),
  };
  writeFileSync(
    join(__dirname, '..', '..', 'bench', 'results.json'),
    `${JSON.stringify(results, null, 2)}\n`,
  );
  process.stdout.write(report(sections));
}

main().catch((error: unknown) => {
  process.stderr.write(
    `bench could not run: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
