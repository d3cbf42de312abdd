import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { request } from 'undici';
import { DeleteObjectsCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import type { S3Settings } from '../src/storage/s3/s3-audio-store.js';
import type { LocalCdn } from '../harness/local-cdn.js';
import { alternated, forkForAnswer, medianBy } from './lib.js';

const MB = 1_000_000;

export interface ProbeResult {
  readonly bytes: number;
  readonly seconds: number;
  readonly rssGrowthBytes: number;
}

async function runProbe(
  cdn: LocalCdn,
  urls: string[],
  sampleRss: boolean,
  mode: 'worker' | 'plain' | 'bare' = 'worker',
  s3?: { readonly settings: S3Settings; readonly env: Record<string, string> },
): Promise<ProbeResult> {
  const { answer } = await forkForAnswer(
    join(__dirname, 'download-probe.js'),
    {
      ...(s3 === undefined ? {} : { s3: s3.settings }),
      urls,
      origin: cdn.origin,
      ca: cdn.ca,
      dir: mkdtempSync(join(tmpdir(), 'aw-bench-dl-')),
      maxBytes: 1_000 * MB,
      sampleRss,
      mode,
    },
    { execArgv: ['--expose-gc'], env: s3?.env ?? {} },
  );
  return answer as ProbeResult;
}

/** curl to /dev/null, one process for all URLs (one connection, like the worker's agent). */
async function curlSeconds(cdn: LocalCdn, urls: string[]): Promise<number | undefined> {
  const caFile = join(mkdtempSync(join(tmpdir(), 'aw-bench-ca-')), 'ca.pem');
  writeFileSync(caFile, cdn.ca);
  const args = ['-s', '-f', '--cacert', caFile, ...urls.flatMap((url) => ['-o', '/dev/null', url])];
  const started = performance.now();
  try {
    await promisify(execFile)('curl', args, { maxBuffer: 1024 });
  } catch (error: unknown) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  } finally {
    rmSync(dirname(caFile), { recursive: true, force: true });
  }
  return (performance.now() - started) / 1000;
}

/** A bare undici stream to nowhere: the ceiling for Node itself on this machine. */
async function bareUndiciSeconds(cdn: LocalCdn, urls: string[]): Promise<number> {
  const { Agent } = await import('undici');
  const agent = new Agent({ connect: { ca: cdn.ca } });
  const started = performance.now();
  for (const url of urls) {
    const res = await request(url, { dispatcher: agent });
    for await (const _chunk of res.body) {
      // discard
    }
  }
  await agent.close();
  return (performance.now() - started) / 1000;
}

export async function runDownloads(cdn: LocalCdn, files = 20, fileMb = 50, bigMb = 200) {
  const file = randomBytes(fileMb * MB);
  const big = randomBytes(bigMb * MB);
  const serve = (body: Buffer) => (_req: unknown, res: import('node:http').ServerResponse) => {
    res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': body.length }).end(body);
  };
  const urls = Array.from({ length: files }, (_, i) => `${cdn.origin}/dl/${fileMb}mb-${i}.mp3`);
  for (const url of urls) cdn.route(new URL(url).pathname, serve(file));
  cdn.route('/dl/big.mp3', serve(big));

  process.stderr.write(
    `downloads: ${files} × ${fileMb} MB through the worker's downloader, the plain baseline, curl and bare undici\n`,
  );
  // Three rounds, alternated, the order rotated each round, and each kind's median: one shot of
  // each moves a ratio by a quarter from one whole run to the next.
  const runs = {
    ours: async () => (await runProbe(cdn, urls, false)).seconds,
    plain: async () => (await runProbe(cdn, urls, false, 'plain')).seconds,
    curl: () => curlSeconds(cdn, urls),
    bare: () => bareUndiciSeconds(cdn, urls),
  };
  const rounds = await alternated(runs, [
    ['ours', 'plain', 'curl', 'bare'],
    ['plain', 'bare', 'ours', 'curl'],
    ['bare', 'curl', 'plain', 'ours'],
  ]);
  const ours = median(rounds.ours);
  const plain = median(rounds.plain);
  const curl = median(rounds.curl);
  const bare = median(rounds.bare);
  process.stderr.write(`downloads: one ${bigMb} MB file for peak RSS growth\n`);
  const rss = await runProbe(cdn, [`${cdn.origin}/dl/big.mp3`], true);
  // Growth that does not scale with the file is garbage awaiting GC, not data held.
  const rssSmall = await runProbe(cdn, [urls[0] ?? ''], true);
  const rssBare = await runProbe(cdn, [`${cdn.origin}/dl/big.mp3`], true, 'bare');
  const mbps = perSecondOf(files * fileMb);
  return {
    files,
    fileMb,
    oursMBps: mbps(ours) ?? 0,
    /** The baseline: plain undici through a SHA-256 into a file, fsynced. */
    plainMBps: mbps(plain) ?? 0,
    curlMBps: mbps(curl),
    bareUndiciMBps: mbps(bare) ?? 0,
    /** MB/s of each round, in the order run; the figures above are their medians. */
    rounds: {
      ours: rounds.ours.map(mbps),
      plain: rounds.plain.map(mbps),
      curl: rounds.curl.map(mbps),
      bare: rounds.bare.map(mbps),
    },
    bigFileMb: bigMb,
    rssGrowthMb: round(rss.rssGrowthBytes / MB),
    rssGrowthSmallFileMb: round(rssSmall.rssGrowthBytes / MB),
    rssGrowthBareUndiciMb: round(rssBare.rssGrowthBytes / MB),
  };
}

/**
 * Large files into the bucket through the worker's own code (download, SHA-256, multipart
 * upload), and the peak RSS growth of a process doing it for one 200 MB file. The baseline: the
 * same files as a plain stream (undici → SHA-256 → one streamed PutObject) to the same gateway;
 * `curl -T` from disk, the ceiling. Call after runDownloads: the CDN routes are its.
 */
export async function runS3Downloads(
  cdn: LocalCdn,
  s3: {
    readonly settings: S3Settings;
    readonly env: Record<string, string>;
    /** Empties the bucket after each run, outside its timing. */
    readonly empty: () => Promise<void>;
  },
  files = 8,
  fileMb = 50,
) {
  const urls = Array.from({ length: files }, (_, i) => `${cdn.origin}/dl/${fileMb}mb-${i}.mp3`);
  process.stderr.write(`downloads into S3: ${files} × ${fileMb} MB, then one 200 MB file\n`);
  // The gateway keeps what it stores in memory: each run's files are deleted after it, or the
  // nine runs on top of the end-to-end runs' objects fill it (a whole run stopped so, EPIPE).
  const thenEmpty = async <T>(run: () => Promise<T>): Promise<T> => {
    const result = await run();
    await s3.empty();
    return result;
  };
  // Alternated, three rounds, each kind's median (one of each read 0.49 and 0.53 in two runs).
  const rounds = await alternated(
    {
      ours: () => thenEmpty(async () => (await runProbe(cdn, urls, false, 'worker', s3)).seconds),
      plain: () => thenEmpty(async () => (await runProbe(cdn, urls, false, 'plain', s3)).seconds),
      curl: () => thenEmpty(() => curlPutSeconds(s3, files, fileMb)),
    },
    [
      ['ours', 'plain', 'curl'],
      ['plain', 'curl', 'ours'],
      ['curl', 'ours', 'plain'],
    ],
  );
  const ours = median(rounds.ours);
  const plain = median(rounds.plain);
  const curl = median(rounds.curl);
  const mbps = perSecondOf(files * fileMb);
  const rss = await runProbe(cdn, [`${cdn.origin}/dl/big.mp3`], true, 'worker', s3);
  return {
    files,
    fileMb,
    s3MBps: mbps(ours) ?? 0,
    /** The baseline: undici → SHA-256 → one streamed PutObject. */
    plainPutMBps: mbps(plain) ?? 0,
    curlPutMBps: mbps(curl),
    /** MB/s of each round, in the order run; the figures above are their medians. */
    rounds: {
      ours: rounds.ours.map(mbps),
      plain: rounds.plain.map(mbps),
      curl: rounds.curl.map(mbps),
    },
    rssGrowthMb: round(rss.rssGrowthBytes / MB),
  };
}

/**
 * `curl -T` of the same number of files of the same size from disk to the same gateway (SigV4,
 * one curl process, one connection, one PUT each): what a bare upload to this S3 server costs.
 */
async function curlPutSeconds(
  s3: { readonly settings: S3Settings; readonly env: Record<string, string> },
  files: number,
  fileMb: number,
): Promise<number | undefined> {
  const dir = mkdtempSync(join(tmpdir(), 'aw-bench-put-'));
  const file = join(dir, 'file.mp3');
  writeFileSync(file, randomBytes(fileMb * MB));
  const { s3Endpoint, s3Bucket, s3Region } = s3.settings;
  const user = `${s3.env.AWS_ACCESS_KEY_ID ?? ''}:${s3.env.AWS_SECRET_ACCESS_KEY ?? ''}`;
  const args = [
    '-s',
    '-f',
    '--aws-sigv4',
    `aws:amz:${s3Region}:s3`,
    '--user',
    user,
    '-H',
    'x-amz-content-sha256: UNSIGNED-PAYLOAD',
    ...Array.from({ length: files }, (_, i) => [
      '-T',
      file,
      `${s3Endpoint ?? ''}/${s3Bucket ?? ''}/curl-put/${i}.mp3`,
    ]).flat(),
  ];
  const started = performance.now();
  try {
    await promisify(execFile)('curl', args, { maxBuffer: 1024 * 1024 });
  } catch (error: unknown) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return (performance.now() - started) / 1000;
}

/** MB/s of `mb` in the seconds given; null for a run that could not be made (no curl). */
function perSecondOf(mb: number) {
  return (seconds: number | undefined) => (seconds === undefined ? null : round(mb / seconds));
}

/** The median of the runs, undefined when any is (curl missing). */
function median(values: readonly (number | undefined)[]): number | undefined {
  return values.includes(undefined) ? undefined : medianBy(values, (value) => value ?? 0);
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}

/** Deletes every object in `bucket`, a page of the listing at a time. */
export async function emptyBucket(client: S3Client, bucket: string): Promise<void> {
  for (;;) {
    const page = await client.send(new ListObjectsV2Command({ Bucket: bucket }));
    const keys = (page.Contents ?? []).flatMap((item) =>
      item.Key === undefined ? [] : [{ Key: item.Key }],
    );
    if (keys.length === 0) return;
    await client.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: keys } }));
  }
}
