/**
 * Paired measurements of two builds on the same machine, in the same hour: the S3 end-to-end
 * section (the naive S3 worker, and the service's worker into S3 of each build) and the
 * downloads section (bare undici, and the worker's code of each build), alternated round by
 * round, each kind's runs printed with their median. Not part of `npm run bench`:
 *
 *   node dist-bench/bench/pair.js [--s3] [--downloads] [--rounds 3] [--deliveries 10000]
 *     [--concurrency 16] [--tree new=/work/main] [--tree old=/tmp/old] [--variant name=ENV=value]
 *     [--parts] [--files 20]
 *
 * A tree is a clone with `dist/` and `dist-bench/` built (`npm run build`, then
 * `tsc -p tsconfig.bench.json`); its own bench code runs its own service and probe, so an older
 * commit is measured as its bench measured it. A variant runs the first tree's service and
 * probe again with one more environment variable (ARCHIVE_RETENTION_HOURS=0). `--parts` takes
 * the first tree's download apart (bench/download-parts.ts). Every run's CPU is printed per item
 * or per MB beside its throughput: on two shared cores it moves less than the throughput does.
 */
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { Redis } from 'ioredis';
import { startCephGateway } from '../src/dev/ceph-gateway.js';
import { quietSdkNodeNotice } from '../src/storage/s3/s3-client.js';
import { startLocalCdn, type LocalCdn } from '../harness/local-cdn.js';
import { startPrivateRedis } from '../harness/private-redis.js';
import type { EndToEndOptions, EndToEndResult } from './end-to-end.js';
import { freshRedis } from './lib.js';
import { orders, pairDownloads, summary } from './pair-downloads.js';
import { pinGateway } from './s3-gateway.js';
import { countObjects } from './stores.js';

export interface Args {
  readonly s3: boolean;
  readonly downloads: boolean;
  readonly rounds: number;
  readonly deliveries: number;
  readonly concurrency: number;
  readonly trees: readonly { readonly name: string; readonly root: string }[];
  readonly variants: readonly { readonly name: string; readonly env: Record<string, string> }[];
  readonly files: number;
  /** The worker's download taken apart (bench/download-parts.ts). */
  readonly parts: boolean;
}

function parseArgs(argv: readonly string[]): Args {
  const value = (flag: string) => {
    const at = argv.indexOf(flag);
    return at === -1 ? undefined : argv[at + 1];
  };
  const all = (flag: string) => argv.flatMap((arg, i) => (arg === flag ? [argv[i + 1] ?? ''] : []));
  const trees = all('--tree').map((spec) => {
    const [name = '', root = ''] = spec.split('=');
    return { name, root };
  });
  const variants = all('--variant').map((spec) => {
    const [name = '', ...rest] = spec.split('=');
    const [key = '', val = ''] = rest.join('=').split(/=(.*)/s);
    return { name, env: { [key]: val } };
  });
  return {
    s3: argv.includes('--s3'),
    downloads: argv.includes('--downloads'),
    rounds: Number(value('--rounds') ?? 3),
    deliveries: Number(value('--deliveries') ?? 10_000),
    concurrency: Number(value('--concurrency') ?? 16),
    trees: trees.length > 0 ? trees : [{ name: 'new', root: join(__dirname, '..', '..') }],
    variants,
    files: Number(value('--files') ?? 20),
    parts: argv.includes('--parts'),
  };
}

/** Daemons the pair runs for every run (Ceph's, Redis): their CPU is the runs' too. */
const DAEMONS = new Set(['radosgw', 'ceph-osd', 'ceph-mon', 'redis-server']);

/** CPU seconds (user + system) of this process's daemon children so far, from /proc. */
function daemonsCpuSeconds(): number {
  let sum = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[1]) !== process.pid || !DAEMONS.has(name)) continue;
    sum += (Number(fields[11]) + Number(fields[12])) / 100;
  }
  return sum;
}

async function pairS3(
  args: Args,
  redisUrl: string,
  redis: Redis,
  cdn: LocalCdn,
): Promise<string[]> {
  quietSdkNodeNotice();
  const gateway = await startCephGateway({ memstoreBytes: 16 * 1024 ** 3 });
  const client = gateway.client();
  const s3Env = { ...gateway.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' };
  // As the stores section runs them: the gateway on a CPU of its own in every run.
  const pinned = await pinGateway();
  try {
    type Run = (options: EndToEndOptions) => Promise<EndToEndResult>;
    // Each tree's own runEndToEnd, which spawns that tree's service (its dist/main.js).
    type RunEndToEnd = typeof import('./end-to-end.js').runEndToEnd;
    const runners = new Map<string, RunEndToEnd>();
    for (const { root } of args.trees) {
      const loaded = (await import(join(root, 'dist-bench', 'bench', 'end-to-end.js'))) as {
        runEndToEnd: RunEndToEnd;
      };
      runners.set(root, loaded.runEndToEnd);
    }
    const runner = (root: string): RunEndToEnd => {
      const run = runners.get(root);
      if (run === undefined) throw new Error(`no tree at ${root}`);
      return run;
    };
    const first = args.trees[0]?.root ?? '';
    const kinds: { name: string; run: Run }[] = [
      {
        name: 'naive S3',
        run: (options) => runner(first)(redisUrl, cdn, { ...options, naiveWorker: 's3' }),
      },
      ...args.trees.map(({ name, root }) => ({
        name: `service S3 (${name})`,
        run: (options: EndToEndOptions) => runner(root)(redisUrl, cdn, options),
      })),
      ...args.variants.map(({ name, env }) => ({
        name: `service S3 (${args.trees[0]?.name ?? ''}, ${name})`,
        run: (options: EndToEndOptions) =>
          runner(first)(redisUrl, cdn, { ...options, env: { ...options.env, ...env } }),
      })),
    ];
    type Measured = EndToEndResult & { readonly daemons: number; readonly bench: number };
    const results = new Map<string, Measured[]>();
    for (const order of orders(kinds, args.rounds)) {
      for (const kind of order) {
        await freshRedis(redis);
        const bucket = `pair-${randomUUID().slice(0, 8)}`;
        await client.send(new CreateBucketCommand({ Bucket: bucket }));
        process.stderr.write(`pair: ${kind.name}\n`);
        const before = { daemons: daemonsCpuSeconds(), bench: process.cpuUsage() };
        let during = { daemons: NaN, bench: NaN };
        const result = await kind.run({
          total: args.deliveries,
          workerConcurrency: args.concurrency,
          env: { ...s3Env, S3_BUCKET: bucket, S3_PREFIX: 'e2e/' },
          countStored: () => countObjects(client, bucket, 'e2e/'),
          // Called once the last job completed, while the clock still runs.
          settledWhen: () => {
            const bench = process.cpuUsage(before.bench);
            during = {
              daemons: daemonsCpuSeconds() - before.daemons,
              bench: (bench.user + bench.system) / 1e6,
            };
            return Promise.resolve();
          },
        });
        results.set(kind.name, [...(results.get(kind.name) ?? []), { ...result, ...during }]);
      }
    }
    const naive = (results.get('naive S3') ?? []).map((r) => r.audioFiles / r.seconds);
    return kinds.map(({ name }) => {
      const runs = results.get(name) ?? [];
      const perSecond = runs.map((r) => r.audioFiles / r.seconds);
      const ratios = perSecond.map((v, i) => v / (naive[i] ?? NaN));
      const perItem = (pick: (r: Measured) => number) =>
        runs.map((r) => (pick(r) / r.audioFiles) * 1000);
      return [
        summary(`${name} items/s`, perSecond, 'items/s'),
        summary('× naive S3 of the round', ratios, ''),
        summary(
          'worker CPU',
          perItem((r) => r.workerCpuSeconds),
          'ms per item',
        ),
        summary(
          'receiver CPU',
          perItem((r) => r.receiverCpuSeconds),
          'ms per item',
        ),
        summary(
          'Ceph and Redis CPU',
          perItem((r) => r.daemons),
          'ms per item',
        ),
        summary(
          'bench (CDN, poster) CPU',
          perItem((r) => r.bench),
          'ms per item',
        ),
        summary(
          'all of it',
          perItem((r) => r.workerCpuSeconds + r.receiverCpuSeconds + r.daemons + r.bench),
          'ms per item',
        ),
        `stored ${runs.map((r) => `${r.audioFiles}/${r.metadataFiles}, ${r.failedJobs} failed`).join('; ')}`,
      ].join('\n  ');
    });
  } finally {
    await pinned.restore();
    client.destroy();
    await gateway.stop();
  }
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const redisServer = await startPrivateRedis({ persistent: true });
  const redis = new Redis(redisServer.url);
  const cdn = await startLocalCdn();
  try {
    const lines: string[] = [];
    if (args.downloads) lines.push('## Downloads', ...(await pairDownloads(args, cdn)), '');
    if (args.s3)
      lines.push('## S3 end to end', ...(await pairS3(args, redisServer.url, redis, cdn)), '');
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await cdn.close();
    redis.disconnect();
    await redisServer.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(
    `pair could not run: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
