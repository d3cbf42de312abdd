import { fork } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { startSandboxProcess } from '../harness/sandbox-process.js';
import { createProviderClient } from '../src/provider/create-provider-client.js';
import { createKeyPool } from '../src/provider/key-pool.js';
import { createRevocationRegistry } from '../src/history/revocation-registry.js';
import { admitMany } from './limiter-child.js';

export interface LimiterResult {
  readonly admissions: number;
  readonly singleProcessPerSecond: number;
  readonly singleProcessMicros: number;
  readonly fourProcessesPerSecond: number;
  readonly fourProcessesMicros: number;
}

/** The limiter's own cost against Redis: one process, then four sharing it. */
export async function runLimiterCost(
  redisUrl: string,
  admissions = 20_000,
): Promise<LimiterResult> {
  process.stderr.write(`limiter: ${admissions} admissions in 1 process, then in each of 4\n`);
  const single = await admitMany({ redisUrl, prefix: 'bench-limiter-1', count: admissions });
  const children = Array.from({ length: 4 }, () =>
    fork(join(__dirname, 'limiter-child.js'), [], {
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    }),
  );
  const started = performance.now();
  const done = children.map((child) => once(child, 'message'));
  for (const child of children)
    child.send({ redisUrl, prefix: 'bench-limiter-4', count: admissions });
  await Promise.all(done);
  const four = performance.now() - started;
  const redis = new Redis(redisUrl);
  for (const pattern of ['bench-limiter-1:*', 'bench-limiter-4:*']) {
    for await (const keys of redis.scanStream({ match: pattern, count: 1000 }) as AsyncIterable<
      string[]
    >) {
      if (keys.length > 0) await redis.del(...keys);
    }
  }
  redis.disconnect();
  return {
    admissions,
    singleProcessPerSecond: Math.round(admissions / (single / 1000)),
    singleProcessMicros: Math.round((single * 1000) / admissions),
    fourProcessesPerSecond: Math.round((4 * admissions) / (four / 1000)),
    fourProcessesMicros: Math.round((four * 1000) / (4 * admissions)),
  };
}

export interface UtilisationResult {
  readonly windows: number;
  readonly windowMs: number;
  readonly limit: number;
  /** Requests answered 200 in each window, counted from the first request's arrival. */
  readonly perWindow: readonly number[];
  readonly utilisation: number;
  readonly tooManyRequests: number;
}

/**
 * The speed the limit allows, reached: 60 callers keep one key's TTS busy through the client
 * against the sandbox (2 s windows) for 5 windows; every window should hold 60, and no 429.
 */
export async function runUtilisation(
  redisUrl: string,
  windows = 5,
  windowMs = 2000,
): Promise<UtilisationResult> {
  const sandbox = await startSandboxProcess({
    flags: { 'rate-window-ms': String(windowMs) },
    env: { WEBHOOK_SECRETS: 'whsec_bench', REDIS_URL: redisUrl },
    prefix: 'bench-utilisation',
  });
  const redis = new Redis(redisUrl);
  const client = await createProviderClient({
    baseUrl: sandbox.info.api,
    keys: [sandbox.info.key],
    redis,
    prefix: 'bench-utilisation-client',
    windowMs,
    cacheTtlSeconds: 0,
  });
  process.stderr.write(
    `limiter utilisation: ${windows} windows of ${windowMs} ms at 60 per window\n`,
  );
  const stopAt = performance.now() + (windows + 0.5) * windowMs;
  let n = 0;
  await Promise.all(
    Array.from({ length: 60 }, async () => {
      while (performance.now() < stopAt) {
        await client.tts({ text: `utilisation ${n++}`, voice: 'alloy' }).catch(() => undefined);
      }
    }),
  );
  const log = (await sandbox.call('GET', '/sandbox/requests')).body as {
    at: number;
    status: number;
  }[];
  await client.close();
  redis.disconnect();
  await sandbox.stop();
  const first = Math.min(...log.map((r) => r.at));
  const perWindow = Array.from(
    { length: windows },
    (_unused, w) =>
      log.filter(
        (r) =>
          r.status === 200 && r.at >= first + w * windowMs && r.at < first + (w + 1) * windowMs,
      ).length,
  );
  const sent = perWindow.reduce((sum, count) => sum + count, 0);
  return {
    windows,
    windowMs,
    limit: 60,
    perWindow,
    utilisation: Math.round((sent / (60 * windows)) * 1000) / 1000,
    tooManyRequests: log.filter((r) => r.status === 429).length,
  };
}

/**
 * How stale a client's revoked set is: from the registry's write (what a key.revoked delivery's
 * worker does) until the key pool in another connection stops choosing the key. 20 samples.
 */
export async function runRevocationStaleness(redisUrl: string, samples = 20) {
  const redis = new Redis(redisUrl);
  const writer = new Redis(redisUrl);
  const registry = createRevocationRegistry(writer, 'bench-revocations');
  const keys = Array.from({ length: samples }, (_unused, i) => ({ id: `key_${i}`, token: 't' }));
  const pool = await createKeyPool(
    [...keys, { id: 'key_last', token: 't' }],
    redis,
    'bench-revocations',
  );
  const micros: number[] = [];
  for (const key of keys) {
    const started = performance.now();
    await registry.record({ event: 'key.revoked', data: { id: key.id } }, new Date().toISOString());
    while (pool.current().id === key.id) await new Promise((resolve) => setImmediate(resolve));
    micros.push(Math.round((performance.now() - started) * 1000));
  }
  await pool.close();
  await writer.del('bench-revocations:revoked-keys');
  redis.disconnect();
  writer.disconnect();
  const sorted = [...micros].sort((a, b) => a - b);
  return {
    samples,
    medianMicros: sorted[Math.floor(samples / 2)] ?? 0,
    maxMicros: sorted.at(-1) ?? 0,
  };
}
