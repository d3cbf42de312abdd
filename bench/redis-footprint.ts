import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { createDeliveryQueue } from '../src/queue/delivery-queue.js';
import { deliveryKeys } from '../src/queue/delivery-keys.js';
import { createForwardQueue, forwardJobId } from '../src/forwarding/forward-queue.js';
import { signPayload } from '../src/provider-spec/signature.js';
import { eventually } from '../src/util/eventually.js';
import { freePort } from '../harness/private-redis.js';
import { BENCH_SECRET, spawnService, stop } from './lib.js';

/** The bytes one job's hash holds in Redis: every field's name and value. */
export interface JobBytes {
  readonly bytes: number;
  /** MEMORY USAGE: the same plus Redis's and the allocator's overhead. */
  readonly memory: number;
}

export interface FootprintRow {
  readonly body: number;
  readonly waiting: JobBytes;
  readonly completed: JobBytes;
  readonly forward: JobBytes;
  readonly message: number;
  /** The forward job once sent (kept an hour). */
  readonly sent: JobBytes;
}

/**
 * What one delivery leaves in the queue's Redis, at 1 KB and 1 MB bodies of `[1e20,…]` (the
 * issue's reproduction: 4,612,953 bytes queued for 1,048,428 sent, 22.6 MB left after a 1.5 MB
 * body was handled and forwarded): a waiting delivery, the same job once completed, and its
 * forward while it waits to be tried again (the one destination answers 503).
 */
export async function runRedisFootprint(redisUrl: string): Promise<FootprintRow[]> {
  const redis = new Redis(redisUrl);
  const prefix = `footprint-${randomUUID().slice(0, 8)}`;
  const audioDir = mkdtempSync(join(tmpdir(), 'aw-bench-footprint-'));
  let failing = true;
  const endpoint = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(failing ? 503 : 204).end());
  });
  endpoint.listen(0, '127.0.0.1');
  await once(endpoint, 'listening');
  const port = await freePort();
  const common = {
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: prefix,
    LOG_LEVEL: 'error',
    AUDIO_DIR: audioDir,
    FORWARD_URLS: `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}/hooks`,
    FORWARD_SECRET: `whsec_${randomBytes(24).toString('base64')}`,
    FORWARD_BACKOFF_MS: '600000',
  };
  const service = await spawnService({ ...common, ROLE: 'all', PORT: String(port) });
  const deliveries = createDeliveryQueue({ connection: redis, prefix });
  const forwards = createForwardQueue(redis, prefix);
  const hash = async (key: string): Promise<JobBytes> => {
    const fields = await redis.hkeys(key);
    const lengths = await Promise.all(fields.map((field) => redis.hstrlen(key, field)));
    const bytes = fields.reduce((n, f, i) => n + Buffer.byteLength(f) + (lengths[i] ?? 0), 0);
    return { bytes, memory: Number(await redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0')) };
  };
  try {
    const rows: FootprintRow[] = [];
    for (const size of [1024, 1_048_428]) {
      const id = `footprint-${randomUUID()}`;
      const head = `{"event":"audio.failed","data":{"id":"${id}","values":[`;
      const count = Math.floor((size - head.length - 3) / 5);
      const body = `${head}${Array.from({ length: count }, () => '1e20').join(',')}]}}`;
      await deliveries.pause();
      const answer = await fetch(`http://127.0.0.1:${port}/webhooks`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-service-signature': signPayload(body, BENCH_SECRET),
        },
        body,
      });
      if (answer.status !== 202) throw new Error(`footprint: answered ${answer.status}`);
      const jobId = String(await redis.get(deliveryKeys(prefix).pairOf('audio.failed', id).mark));
      const waiting = await hash(`${prefix}:deliveries:${jobId}`);
      await deliveries.resume();
      const forward = await eventually(async () => {
        const job = await forwards.getJob(forwardJobId(jobId));
        return (await job?.getState()) === 'delayed' ? job : undefined;
      });
      await eventually(async () =>
        (await deliveries.getJobState(jobId)) === 'completed' ? true : undefined,
      );
      const row = {
        body: body.length,
        waiting,
        completed: await hash(`${prefix}:deliveries:${jobId}`),
        forward: await hash(`${prefix}:forwards:${forwardJobId(jobId)}`),
        message: Buffer.byteLength(forward.data.body),
      };
      failing = false;
      await forward.promote();
      // Sent to every destination, a forward job is removed.
      await eventually(async () => ((await forwards.getJob(forward.id ?? '')) ? undefined : true));
      failing = true;
      rows.push({ ...row, sent: await hash(`${prefix}:forwards:${forwardJobId(jobId)}`) });
    }
    return rows;
  } finally {
    await stop(service);
    await Promise.all([
      deliveries.obliterate({ force: true }),
      forwards.obliterate({ force: true }),
    ]);
    await Promise.all([deliveries.close(), forwards.close()]);
    const left = await redis.keys(`${prefix}:*`);
    if (left.length > 0) await redis.del(...left);
    redis.disconnect();
    endpoint.close();
    endpoint.closeAllConnections();
    rmSync(audioDir, { recursive: true, force: true });
  }
}

/** The three targets, each over both sizes. */
export function footprintTargets(rows: readonly FootprintRow[]): [string, boolean, string][] {
  const all = (test: (r: FootprintRow) => boolean) => rows.every(test);
  const list = (value: (r: FootprintRow) => string) => rows.map(value).join('; ');
  return [
    [
      'Redis per waiting delivery ≤ body + 2 KB (1 KB and 1 MB bodies)',
      all((r) => r.waiting.bytes <= r.body + 2048),
      list((r) => `${r.waiting.bytes} B for ${r.body} (MEMORY USAGE ${r.waiting.memory})`),
    ],
    [
      'Redis per retained completed delivery ≤ 2 KB whatever the body (its job, and its forward once sent)',
      all((r) => r.completed.memory <= 2048 && r.sent.memory <= 2048),
      list((r) => `${r.completed.memory} and ${r.sent.memory} B after a ${r.body} B body`),
    ],
    [
      'Redis per pending forward ≤ its message + 1 KB',
      all((r) => r.forward.bytes <= r.message + 1024),
      list((r) => `${r.forward.bytes} B for ${r.message} (MEMORY USAGE ${r.forward.memory})`),
    ],
  ];
}
