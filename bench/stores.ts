import { randomUUID } from 'node:crypto';
import {
  CreateBucketCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  S3Client,
} from '@aws-sdk/client-s3';
import { startCephGateway } from '../src/dev/ceph-gateway.js';
import type { LocalCdn } from '../harness/local-cdn.js';
import { emptyBucket, runS3Downloads } from './downloads.js';
import {
  perSecond,
  runEndToEnd,
  sweepConcurrency,
  type EndToEndOptions,
  type EndToEndResult,
  type StoredCounts,
} from './end-to-end.js';
import { inRounds, medianRun } from './rounds.js';
import { gatewayRequests, pinGateway, type Pinned } from './s3-gateway.js';
import { pairedRatio, rate, type PairedRatio } from './section.js';

/** An S3 run, with the gateway's requests per stored item over it. */
export type S3Run = EndToEndResult & { readonly gatewayRequestsPerItem: number };

export interface StoresResult {
  readonly workerConcurrency: number;
  /** The S3 runs' WORKER_CONCURRENCY, measured as the local store's is. */
  readonly s3Concurrency: Awaited<ReturnType<typeof sweepConcurrency>>;
  /** The naive worker, no durability: a ceiling, printed. */
  readonly naive: EndToEndResult;
  /** The naive worker as durable as the local store: the CPU target's baseline. */
  readonly durable: EndToEndResult;
  /** Where the gateway ran (pinned to a core of its own) during the S3 runs. */
  readonly pinned: string;
  /** The naive S3 worker writing both objects: the S3 target's baseline. */
  readonly naiveS3: S3Run;
  /** The naive S3 worker writing the audio alone: one run, printed for information. */
  readonly naiveS3AudioOnly: S3Run;
  readonly local: EndToEndResult;
  readonly s3: S3Run;
  /** The service's worker with ARCHIVE_RETENTION_HOURS=0: what the archive costs. */
  readonly localNoArchive: EndToEndResult;
  readonly s3NoArchive: S3Run;
  /** items/s of each; each store's as a ratio to its naive worker's (1 = as fast). */
  readonly itemsPerSecond: {
    readonly naive: number;
    readonly durable: number;
    readonly naiveS3: number;
    readonly naiveS3AudioOnly: number;
    readonly local: number;
    readonly s3: number;
    readonly localNoArchive: number;
    readonly s3NoArchive: number;
  };
  /**
   * The targets' ratios, each the median of the rounds' own (the service's run against its naive
   * worker's run of the same round, minutes apart), so a machine that slows or speeds up over
   * the section moves both sides of each ratio: items/s into the local store and into S3, and
   * the worker CPU per item of each store, to the durable naive worker's and the naive S3
   * worker's.
   */
  readonly localToNaive: PairedRatio;
  readonly s3ToNaiveS3: PairedRatio;
  readonly localCpuToDurable: PairedRatio;
  readonly s3CpuToNaiveS3: PairedRatio;
  /** items/s of each round of the local runs; `naive`, `local` and `localNoArchive` are the medians. */
  readonly localRounds: {
    readonly naive: readonly number[];
    readonly durable: readonly number[];
    readonly local: readonly number[];
    readonly localNoArchive: readonly number[];
  };
  /** items/s of each round of the S3 runs; `naiveS3`, `s3` and `s3NoArchive` are the medians. */
  readonly s3Rounds: {
    readonly naiveS3: readonly number[];
    readonly s3: readonly number[];
    readonly s3NoArchive: readonly number[];
  };
  readonly s3Downloads: Awaited<ReturnType<typeof runS3Downloads>>;
}

/**
 * The same end-to-end run (10,000 deliveries of 64 KB, 1,000 of them duplicates) in one bench
 * run, each on an emptied Redis: the naive worker (fetch → write, nothing else) and the service's
 * worker into the local store at the local sweep's WORKER_CONCURRENCY, with the archive and
 * without, three rounds in different orders, each one's median reported; the naive S3 worker
 * and the service's into a bucket of a real S3 server (Ceph's RADOS Gateway on this machine, as
 * the tests start it) at S3's own, with the archive and without, three rounds as well. Then
 * large files into a bucket of their own. The absolute times move with the machine; the ratios to the naive workers of the
 * same run move less.
 */
export async function runStores(
  redisUrl: string,
  cdn: LocalCdn,
  workerConcurrency: number,
  /** Empties the bench's Redis: each run starts on the same, not on the runs before it. */
  fresh: () => Promise<void>,
): Promise<StoresResult> {
  // Room for the sweep's items, nine runs of 9,000 items (5.2 GB) and three rounds of the large
  // files (2.4 GB); memstore takes RAM as it fills.
  const gateway = await startCephGateway({ memstoreBytes: 12 * 1024 ** 3 });
  const client = gateway.client();
  let pinned: Pinned | undefined;
  try {
    // A bucket per run: RGW's bucket index grows with every object, and a run into a bucket the
    // runs before it filled would pay for theirs (S3 0.35 × naive in one whole run, 0.47 in
    // another where fewer runs came before).
    const newBucket = async () => {
      const name = `bench-${randomUUID().slice(0, 8)}`;
      await client.send(new CreateBucketCommand({ Bucket: name }));
      return name;
    };
    // The SDK's nine-line Node-version notice, once per baseline process, is not a figure.
    const s3Env = { ...gateway.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' };
    // The three local runs, three rounds, each kind's median run (by items/s) reported. One run
    // of each moved by up to 0.4 ms of worker CPU per item from one run to the next on this disk,
    // more than the archive costs.
    const runs = {
      naive: () => runEndToEnd(redisUrl, cdn, { workerConcurrency, naiveWorker: 'local' }),
      durable: () => runEndToEnd(redisUrl, cdn, { workerConcurrency, naiveWorker: 'durable' }),
      local: () => runEndToEnd(redisUrl, cdn, { workerConcurrency }),
      // The archive is the one guarantee a setting turns off: its price, shown beside.
      localNoArchive: () => runEndToEnd(redisUrl, cdn, { workerConcurrency, env: NO_ARCHIVE }),
    };
    const names = {
      naive: 'the naive worker',
      durable: 'the durable naive worker',
      local: 'the local store',
      localNoArchive: 'the local store, ARCHIVE_RETENTION_HOURS=0',
    };
    const rounds = await inRounds(runs, names, fresh);
    const naive = medianRun(rounds.naive);
    const durable = medianRun(rounds.durable);
    const local = medianRun(rounds.local);
    const localNoArchive = medianRun(rounds.localNoArchive);
    // A job into S3 waits on the gateway for most of its time, so more of them at once pay:
    // WORKER_CONCURRENCY for S3 is measured as for the local store, with the service's worker,
    // and both S3 workers run at it.
    pinned = await pinGateway();
    process.stderr.write(`stores: ${pinned.description}; WORKER_CONCURRENCY for S3\n`);
    const inBucket = (prefix: string, into: string, env: Record<string, string> = {}) => ({
      env: { ...s3Env, S3_BUCKET: into, S3_PREFIX: prefix, ...env },
      countStored: () => countObjects(client, into, prefix),
    });
    const s3Concurrency = await sweepConcurrency(redisUrl, cdn, 2000, async () => {
      await fresh();
      return inBucket('sweep/', await newBucket());
    });
    // Three rounds, as the local runs: one run of each moved the S3 ratio between 0.49 and 0.72
    // from one whole run to the next.
    // At the sweep's WORKER_CONCURRENCY, with the gateway's requests from the first POST until
    // the last job settled, per stored item.
    // Each run's objects are deleted after it, outside its timing: the gateway keeps them in RAM
    // (memstore), and a run into a gateway its neighbours filled was slower (performance-history).
    const s3Run = async (
      prefix: string,
      kind: Pick<EndToEndOptions, 'naiveWorker' | 'env'> = {},
    ): Promise<S3Run> => {
      const bucket = await newBucket();
      const before = await gatewayRequests(gateway.dir);
      let requests = NaN;
      const result = await runEndToEnd(redisUrl, cdn, {
        ...kind,
        ...inBucket(prefix, bucket, kind.env),
        workerConcurrency: s3Concurrency.best,
        settledWhen: async () => {
          requests = (await gatewayRequests(gateway.dir)) - before;
        },
      });
      await emptyBucket(client, bucket);
      return { ...result, gatewayRequestsPerItem: round2(requests / result.audioFiles) };
    };
    const s3Runs = {
      naiveS3: () => s3Run('naive/', { naiveWorker: 's3' }),
      s3: () => s3Run('e2e/'),
      s3NoArchive: () => s3Run('e2e/', { env: NO_ARCHIVE }),
    };
    const s3Rounds = await inRounds(
      s3Runs,
      {
        naiveS3: 'the naive S3 worker (Ceph RGW)',
        s3: 'S3 (Ceph RGW)',
        s3NoArchive: 'S3 (Ceph RGW), ARCHIVE_RETENTION_HOURS=0',
      },
      fresh,
    );
    const naiveS3 = medianRun(s3Rounds.naiveS3);
    const s3 = medianRun(s3Rounds.s3);
    const s3NoArchive = medianRun(s3Rounds.s3NoArchive);
    process.stderr.write('stores: the naive S3 worker writing the audio alone (information)\n');
    await fresh();
    const naiveS3AudioOnly = await s3Run('naive/', { naiveWorker: 's3-audio-only' });
    const large = await newBucket();
    const s3Downloads = await runS3Downloads(cdn, {
      settings: {
        s3Bucket: large,
        s3Prefix: 'large/',
        s3Endpoint: gateway.endpoint,
        s3Region: 'us-east-1',
        s3ForcePathStyle: true,
      },
      env: gateway.env,
      empty: () => emptyBucket(client, large),
    });
    const itemsPerSecond = {
      naive: perSecond(naive),
      durable: perSecond(durable),
      naiveS3: perSecond(naiveS3),
      naiveS3AudioOnly: perSecond(naiveS3AudioOnly),
      local: perSecond(local),
      s3: perSecond(s3),
      localNoArchive: perSecond(localNoArchive),
      s3NoArchive: perSecond(s3NoArchive),
    };
    return {
      workerConcurrency,
      s3Concurrency,
      naive,
      durable,
      pinned: pinned.description,
      naiveS3,
      naiveS3AudioOnly,
      local,
      s3,
      localNoArchive,
      s3NoArchive,
      itemsPerSecond,
      localToNaive: pairedRatio(rounds.local, rounds.naive, rate),
      s3ToNaiveS3: pairedRatio(s3Rounds.s3, s3Rounds.naiveS3, rate),
      localCpuToDurable: pairedRatio(rounds.local, rounds.durable, cpuPerItem),
      s3CpuToNaiveS3: pairedRatio(s3Rounds.s3, s3Rounds.naiveS3, cpuPerItem),
      localRounds: {
        naive: rounds.naive.map(perSecond),
        durable: rounds.durable.map(perSecond),
        local: rounds.local.map(perSecond),
        localNoArchive: rounds.localNoArchive.map(perSecond),
      },
      s3Rounds: {
        naiveS3: s3Rounds.naiveS3.map(perSecond),
        s3: s3Rounds.s3.map(perSecond),
        s3NoArchive: s3Rounds.s3NoArchive.map(perSecond),
      },
      s3Downloads,
    };
  } finally {
    await pinned?.restore();
    client.destroy();
    await gateway.stop();
  }
}

const NO_ARCHIVE = { ARCHIVE_RETENTION_HOURS: '0' };
/** A run's worker CPU per stored item, unrounded. */
const cpuPerItem = (run: EndToEndResult) => run.workerCpuSeconds / run.audioFiles;

const round2 = (n: number) => Math.round(n * 100) / 100;

/**
 * The prefix's top level holds the items' objects; the archive's are under `<prefix>.archive/`,
 * counted by the entries they hold (a batch holds a line each; read after the run, not timed).
 */
export async function countObjects(
  client: S3Client,
  bucket: string,
  prefix: string,
): Promise<StoredCounts> {
  let audio = 0;
  let metadata = 0;
  const archiveKeys: string[] = [];
  let token: string | undefined;
  do {
    const page = await client.send(
      new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }),
    );
    for (const item of page.Contents ?? []) {
      const name = item.Key?.slice(prefix.length) ?? '';
      if (name.startsWith('.archive/')) archiveKeys.push(item.Key ?? '');
      else if (name.includes('/')) continue;
      else if (name.endsWith('.mp3')) audio++;
      else if (name.endsWith('.json')) metadata++;
    }
    token = page.NextContinuationToken;
  } while (token !== undefined);
  let archive = 0;
  for (let start = 0; start < archiveKeys.length; start += 32) {
    const texts = await Promise.all(
      archiveKeys.slice(start, start + 32).map(async (Key) => {
        const answer = await client.send(new GetObjectCommand({ Bucket: bucket, Key }));
        return (await answer.Body?.transformToString()) ?? '';
      }),
    );
    for (const text of texts) archive += text.split('\n').filter((line) => line !== '').length;
  }
  process.stderr.write(`  archive: ${archive} entries in ${archiveKeys.length} objects\n`);
  return { audio, metadata, archive };
}
