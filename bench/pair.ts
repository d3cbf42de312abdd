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
import { fork } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { Redis } from 'ioredis';
import { Agent, request } from 'undici';
import { startCephGateway } from '../src/dev/ceph-gateway.js';
import { startLocalCdn, type LocalCdn } from '../harness/local-cdn.js';
import { startPrivateRedis } from '../harness/private-redis.js';
import type { EndToEndOptions, EndToEndResult } from './end-to-end.js';
import { PARTS, type Part } from './download-parts.js';
import { cpuSecondsOf, medianBy } from './lib.js';
import { countObjects } from './stores.js';

const MB = 1_000_000;

interface Args {
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

/** Rotations of `kinds`, one per round: each kind first once in every `kinds.length` rounds. */
function orders<Kind>(kinds: readonly Kind[], rounds: number): Kind[][] {
  return Array.from({ length: rounds }, (_, round) =>
    kinds.map((_, i) => kinds[(i + round) % kinds.length] as Kind),
  );
}

function summary(name: string, values: readonly number[], unit: string, extra = ''): string {
  const median = medianBy(values, (v) => v) ?? NaN;
  return `${name}: median ${round(median)} ${unit} (rounds ${values.map(round).join(', ')})${extra}`;
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
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

/** Empties Redis and compacts its append-only file, as the bench's stores section does. */
async function freshRedis(redis: Redis): Promise<void> {
  await redis.flushall();
  const rewriting = async () =>
    /^aof_rewrite_(in_progress|scheduled):1/m.test(await redis.info('persistence'));
  while (await rewriting()) await new Promise((resolve) => setTimeout(resolve, 100));
  await redis.bgrewriteaof();
  while (await rewriting()) await new Promise((resolve) => setTimeout(resolve, 100));
}

async function pairS3(
  args: Args,
  redisUrl: string,
  redis: Redis,
  cdn: LocalCdn,
): Promise<string[]> {
  const gateway = await startCephGateway({ memstoreBytes: 16 * 1024 ** 3 });
  const client = gateway.client();
  const s3Env = { ...gateway.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' };
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
    client.destroy();
    await gateway.stop();
  }
}

/**
 * Forks `script` with `message`, waits for its answer and its exit; `cpu` is the child's CPU
 * seconds when it answered (start-up included), from /proc.
 */
async function forked(
  script: string,
  message: Record<string, unknown>,
  options: { execArgv?: string[]; env?: Record<string, string> } = {},
): Promise<{ result: { seconds: number; cpu?: number }; cpu: number }> {
  const child = fork(script, [], {
    execArgv: options.execArgv ?? [],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, ...options.env },
  });
  child.send(message);
  const [result] = (await once(child, 'message')) as [{ seconds: number; cpu?: number }];
  const cpu = cpuSecondsOf(child.pid);
  if (child.exitCode === null) await once(child, 'exit');
  return { result, cpu };
}

/** One run of a tree's download probe (bench/download-probe.ts), its worker mode. */
async function probe(
  root: string,
  cdn: LocalCdn,
  urls: string[],
  env: Record<string, string> = {},
): Promise<{ seconds: number; cpu: number }> {
  const { result, cpu } = await forked(
    join(root, 'dist-bench', 'bench', 'download-probe.js'),
    {
      urls,
      origin: cdn.origin,
      ca: cdn.ca,
      dir: mkdtempSync(join(tmpdir(), 'aw-pair-dl-')),
      maxBytes: 1_000 * MB,
      sampleRss: false,
      mode: 'worker',
    },
    { execArgv: ['--expose-gc'], env },
  );
  return { seconds: result.seconds, cpu };
}

/** One run of the first tree's bench/download-parts.ts, up to `part`; its own CPU, not start-up. */
async function parts(root: string, cdn: LocalCdn, urls: string[], part: Part) {
  const { result } = await forked(join(root, 'dist-bench', 'bench', 'download-parts.js'), {
    urls,
    origin: cdn.origin,
    ca: cdn.ca,
    dir: mkdtempSync(join(tmpdir(), 'aw-pair-parts-')),
    part,
  });
  return { seconds: result.seconds, cpu: result.cpu ?? NaN };
}

/** The bench's bare undici (bench/downloads.ts): in this process, beside the CDN. */
async function bareInProcess(
  cdn: LocalCdn,
  urls: string[],
): Promise<{ seconds: number; cpu: number }> {
  const agent = new Agent({ connect: { ca: cdn.ca } });
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  for (const url of urls) {
    const res = await request(url, { dispatcher: agent });
    for await (const _chunk of res.body) {
      // discard
    }
  }
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  await agent.close();
  return { seconds, cpu: (cpu.user + cpu.system) / 1e6 };
}

async function pairDownloads(args: Args, cdn: LocalCdn): Promise<string[]> {
  const fileMb = 50;
  const file = randomBytes(fileMb * MB);
  const urls = Array.from(
    { length: args.files },
    (_, i) => `${cdn.origin}/dl/${fileMb}mb-${i}.mp3`,
  );
  for (const url of urls)
    cdn.route(new URL(url).pathname, (_req, res) => {
      res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': file.length }).end(file);
    });
  const first = args.trees[0]?.root ?? '';
  type Measure = () => Promise<{ seconds: number; cpu: number }>;
  const kinds: { name: string; run: Measure }[] = [
    {
      name: 'bare undici, in the bench process (the target baseline)',
      run: () => bareInProcess(cdn, urls),
    },
    ...args.trees.map(({ name, root }) => ({
      name: `worker's code (${name})`,
      run: () => probe(root, cdn, urls),
    })),
    ...args.variants.map(({ name, env }) => ({
      name: `worker's code (${args.trees[0]?.name ?? ''}, ${name})`,
      run: () => probe(first, cdn, urls, env),
    })),
    ...(args.parts ? PARTS : []).map((part) => ({
      name: `part: ${part}`,
      run: () => parts(first, cdn, urls, part),
    })),
  ];
  const results = new Map<string, { seconds: number; cpu: number }[]>();
  for (const order of orders(kinds, args.rounds)) {
    for (const kind of order) {
      process.stderr.write(`pair: ${kind.name}\n`);
      const result = await kind.run();
      results.set(kind.name, [...(results.get(kind.name) ?? []), result]);
    }
  }
  const mb = args.files * fileMb;
  return kinds.map(({ name }) => {
    const runs = results.get(name) ?? [];
    return `${summary(
      name,
      runs.map((r) => mb / r.seconds),
      'MB/s',
    )}; ${summary(
      'CPU',
      runs.map((r) => (r.cpu / mb) * 1000),
      'ms per MB',
    )}`;
  });
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
