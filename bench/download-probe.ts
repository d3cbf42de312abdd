/**
 * Runs in its own process (forked by bench/downloads.ts) so that its memory is the downloader's
 * alone: downloads each URL exactly as the audio.ready handler does (guarded agent, openDownload,
 * Meter, the atomic write of the local store or the S3 store) and reports bytes, time and peak
 * RSS growth.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createWriteStream, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { Agent } from 'undici';
import { createGuardedAgent } from '../src/download/guarded-agent.js';
import { Meter, openDownload } from '../src/download/open-download.js';
import { createLocalAudioStore } from '../src/storage/local/local-audio-store.js';
import {
  createS3AudioStore,
  createS3Client,
  type S3Settings,
} from '../src/storage/s3/s3-audio-store.js';

interface ProbeRequest {
  readonly urls: string[];
  readonly origin: string;
  readonly ca: string;
  readonly dir: string;
  readonly maxBytes: number;
  readonly sampleRss: boolean;
  /**
   * `worker`: the worker's own code. `plain`: the same work done plainly, the baseline: a plain
   * undici stream through a SHA-256 into a file, fsynced (into S3: one streamed PutObject of the
   * same SDK client settings, its length the download's). `bare`: plain undici discarding the
   * body, the ceiling Node itself sets.
   */
  readonly mode: 'worker' | 'plain' | 'bare';
  /** Into this bucket (AUDIO_STORE=s3) instead of the local store; credentials from the env. */
  readonly s3?: S3Settings;
}

async function probe(request: ProbeRequest) {
  const agent = createGuardedAgent({
    allowPrivateIps: true,
    ca: request.ca,
    connectTimeoutMs: 10_000,
    headersTimeoutMs: 30_000,
    bodyIdleTimeoutMs: 30_000,
  });
  const plainAgent = new Agent({ connect: { ca: request.ca } });
  const plainS3 = request.s3 === undefined ? undefined : createS3Client(request.s3);
  const store =
    request.s3 === undefined
      ? await createLocalAudioStore(request.dir)
      : createS3AudioStore(request.s3);
  // The S3 client loads most of the SDK on its first request (tens of MB of code): a worker has
  // done that long before a large file comes, so the growth measured is the file's alone.
  const warm = `${randomUUID()}-warm.bin`;
  if (request.mode === 'worker') await store.write(warm, [Buffer.alloc(1024)], { id: warm });
  const at = { Bucket: request.s3?.s3Bucket, Key: `${request.s3?.s3Prefix ?? ''}${warm}` };
  if (request.mode === 'plain') await plainS3?.send(new PutObjectCommand({ ...at, Body: 'warm' }));
  global.gc?.();
  const rssBefore = process.memoryUsage.rss();
  let rssPeak = rssBefore;
  let bytes = 0;
  const started = performance.now();
  for (const [i, url] of request.urls.entries()) {
    if (request.mode !== 'worker') {
      const before = bytes;
      await fileAgain(async () => {
        bytes = before;
        await plainFile(url, i);
      });
      continue;
    }
    const opened = await openDownload(url, {
      allowedOrigins: [request.origin],
      dispatcher: agent,
      maxBytes: request.maxBytes,
      signal: AbortSignal.timeout(600_000),
    });
    const meter = new Meter(request.maxBytes);
    const source = request.sampleRss
      ? sampled(meter.measure(opened.body))
      : meter.measure(opened.body);
    // A name and id of its own per probe: the S3 store refuses to replace an object that
    // records no item, or another's (a second probe into the same prefix).
    const name = `${randomUUID()}-${i}.bin`;
    await store.write(name, source, {
      id: name,
      ...(opened.bytes === undefined ? {} : { bytes: opened.bytes }),
    });
    bytes += meter.bytes;
  }
  const seconds = (performance.now() - started) / 1000;
  await agent.close();
  await plainAgent.close();
  plainS3?.destroy();
  rmSync(request.dir, { recursive: true, force: true });
  return { bytes, seconds, rssGrowthBytes: rssPeak - rssBefore };

  /** One file the plain way: `bare` discards it, `plain` hashes it into a file or S3. */
  async function plainFile(url: string, i: number) {
    const res = await plainAgent.request({
      origin: new URL(url).origin,
      path: new URL(url).pathname,
      method: 'GET',
    });
    if (request.mode === 'bare') {
      for await (const chunk of sampled(res.body)) bytes += chunk.length;
      return;
    }
    const hash = createHash('sha256');
    const hashed = async function* (chunks: AsyncIterable<Uint8Array>) {
      for await (const chunk of chunks) {
        hash.update(chunk);
        bytes += chunk.length;
        yield chunk;
      }
    };
    if (plainS3 === undefined)
      await pipeline(
        sampled(res.body),
        hashed,
        // `flush`: fsync before the file is closed.
        createWriteStream(join(request.dir, `plain-${i}.bin`), { flush: true }),
      );
    else
      await plainS3.send(
        new PutObjectCommand({
          Bucket: request.s3?.s3Bucket,
          Key: `${request.s3?.s3Prefix ?? ''}plain-${randomUUID()}.bin`,
          Body: Readable.from(hashed(sampled(res.body))),
          ContentLength: Number(res.headers['content-length']),
        }),
      );
    hash.digest('hex');
  }

  async function* sampled(source: AsyncIterable<Uint8Array>) {
    for await (const chunk of source) {
      rssPeak = Math.max(rssPeak, process.memoryUsage.rss());
      yield chunk;
    }
  }
}

/**
 * One file of a baseline, done again when the CDN closed its connection under it (undici's
 * UND_ERR_SOCKET, "other side closed", once stopped a whole bench run in the plain baseline into
 * S3): undici's `request` sends nothing again by itself, where the worker's downloader has its
 * job's retry. Any other failure stops the probe.
 */
async function fileAgain(run: () => Promise<void>, tries = 3): Promise<void> {
  const closedUnder = (error: unknown): boolean =>
    (error as { code?: unknown }).code === 'UND_ERR_SOCKET' ||
    (error instanceof Error && error.cause !== undefined && closedUnder(error.cause));
  for (let attempt = 1; ; attempt++) {
    try {
      await run();
      return;
    } catch (error: unknown) {
      if (!closedUnder(error) || attempt === tries) throw error;
      process.stderr.write(`probe: a file's connection was closed under it; doing it again\n`);
    }
  }
}

process.once('message', (request: ProbeRequest) => {
  probe(request).then(
    (result) => process.send?.(result, () => process.exit(0)),
    (error: unknown) => {
      process.stderr.write(`probe failed: ${String(error)}\n`);
      process.exit(1);
    },
  );
});
