import { QueueEvents } from 'bullmq';
import type { Redis } from 'ioredis';
import { Pool } from 'undici';
import { DELIVERY_QUEUE } from '../src/queue/delivery-queue.js';
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { freePort } from '../harness/private-redis.js';
import { sampleDelivery } from '../src/provider-spec/sample-delivery.js';
import { signPayload } from '../src/provider-spec/signature.js';

export const BENCH_SECRET = 'whsec_bench';
export const DIST_BENCH = join(__dirname, '..');
export const MAIN = join(__dirname, '..', '..', 'dist', 'main.js');

/** An audio.ready delivery for `id`: its body, and headers that sign it now with BENCH_SECRET. */
export function signedDelivery(id: string, cdnOrigin?: string) {
  const body = JSON.stringify(
    sampleDelivery('audio.ready', cdnOrigin === undefined ? { id } : { id, cdnOrigin }),
  );
  const headers = {
    'content-type': 'application/json',
    'x-service-signature': signPayload(body, BENCH_SECRET),
  };
  return { body, headers };
}

/**
 * Forks a baseline (bench/baselines/*.js) and waits for its 'listening' message; `nice` runs it
 * at that niceness (through nice(1), so every thread of it has it).
 */
export async function forkBaseline(
  name: string,
  env: Record<string, string>,
  nice?: number,
): Promise<ChildProcess> {
  const child = fork(join(__dirname, 'baselines', `${name}.js`), [], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    ...(nice === undefined
      ? {}
      : { execPath: 'nice', execArgv: ['-n', String(nice), process.execPath] }),
  });
  await once(child, 'message');
  return child;
}

/**
 * Runs the real service (`node dist/main.js`) with its log going to /dev/null (not through a pipe
 * into this process, which is also the load generator), and waits until /readyz answers 200;
 * `nice` as forkBaseline's (the processes a cluster's primary forks have it too).
 */
export async function spawnService(
  env: Record<string, string>,
  nice?: number,
): Promise<ChildProcess> {
  const devNull = openSync('/dev/null', 'w');
  const [command, args] =
    nice === undefined
      ? [process.execPath, [MAIN]]
      : ['nice', ['-n', String(nice), process.execPath, MAIN]];
  const child = spawn(command, args, {
    env: { PATH: process.env.PATH ?? '', WEBHOOK_SECRETS: BENCH_SECRET, HOST: '127.0.0.1', ...env },
    stdio: ['ignore', devNull, 'inherit'],
  });
  closeSync(devNull);
  // A ROLE=worker process answers on its health port once its workers run.
  const ready =
    env.ROLE === 'worker'
      ? `http://127.0.0.1:${env.WORKER_HEALTH_PORT ?? ''}/healthz`
      : `http://127.0.0.1:${env.PORT ?? '3000'}/readyz`;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`service exited with ${child.exitCode}`);
    const ok = await fetch(ready).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return child;
    await sleep(50);
  }
}

export async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
}

/**
 * Runs each kind once per round, in that round's order, and returns each kind's results in the
 * order run. Alternating, with the order changing from round to round, keeps a kind from always
 * following the same one (the writeback, the GC, the warm or cold caches it leaves behind).
 */
export async function alternated<Kind extends string, Result>(
  runs: Record<Kind, () => Promise<Result>>,
  orders: readonly (readonly Kind[])[],
): Promise<Record<Kind, Result[]>> {
  const results: Partial<Record<Kind, Result[]>> = {};
  for (const order of orders) {
    for (const kind of order) (results[kind] ??= []).push(await runs[kind]());
  }
  return results as Record<Kind, Result[]>;
}

/** The value of median `key` (the upper one of an even count); undefined for none. */
export function medianBy<T>(values: readonly T[], key: (value: T) => number): T | undefined {
  return [...values].sort((a, b) => key(a) - key(b))[Math.floor(values.length / 2)];
}

export function ratio(a: number, b: number): number {
  return b === 0 ? 0 : Math.round((a / b) * 100) / 100;
}

/** Counts the delivery queue's jobs that completed or failed for good, until `expected` did. */
export async function watchSettledJobs(redisUrl: string, prefix: string, expected: number) {
  const events = new QueueEvents(DELIVERY_QUEUE, { connection: { url: redisUrl }, prefix });
  await events.waitUntilReady();
  let settled = 0;
  let failed = 0;
  const done = new Promise<void>((resolve) => {
    const count = () => {
      if (++settled === expected) resolve();
    };
    events.on('completed', count);
    events.on('failed', () => {
      failed++;
      count();
    });
  });
  return { done, failed: () => failed, close: () => events.close() };
}

export type NaiveWorker = 'local' | 'durable' | 's3' | 's3-audio-only';

/** The baseline file (bench/baselines/) of each naive worker. */
const NAIVE_WORKER_FILE: Record<NaiveWorker, string> = {
  local: 'naive-worker',
  durable: 'durable-worker',
  s3: 'naive-s3-worker',
  's3-audio-only': 'naive-s3-worker',
};

/**
 * The service as docker-compose.yml runs it: a receiver process (ROLE=web, one process) on `port`
 * and a worker process (ROLE=worker) storing audio in `audioDir`, with the download settings and
 * any other `extra` variables. Resolves once both are ready; `stop` them both.
 */
export async function spawnWholeService(
  port: number,
  redisUrl: string,
  prefix: string,
  audioDir: string,
  extra: Record<string, string>,
  /**
   * A naive worker in place of the service's: bench/baselines/naive-worker.ts, durable-worker.ts
   * (the local store's durability), or naive-s3-worker.ts writing both objects (`s3`) or the
   * audio alone (`s3-audio-only`).
   */
  naiveWorker?: NaiveWorker,
): Promise<ChildProcess[]> {
  const common = { REDIS_URL: redisUrl, QUEUE_PREFIX: prefix, LOG_LEVEL: 'info', ...extra };
  const started = await Promise.allSettled([
    spawnService({ ...common, ROLE: 'web', WEB_CONCURRENCY: '1', PORT: String(port) }),
    naiveWorker !== undefined
      ? forkBaseline(NAIVE_WORKER_FILE[naiveWorker], {
          ...common,
          AUDIO_DIR: audioDir,
          NAIVE_S3_OBJECTS: naiveWorker === 's3-audio-only' ? '1' : '2',
        })
      : spawnService({
          ...common,
          ROLE: 'worker',
          WORKER_HEALTH_PORT: String(await freePort()),
          AUDIO_DIR: audioDir,
          DOWNLOAD_ALLOW_PRIVATE_IPS: 'true',
        }),
  ]);
  const running = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const failed = started.find((s) => s.status === 'rejected');
  if (failed === undefined) return running;
  // One could not start: the other must not outlive the bench.
  await Promise.all(running.map(stop));
  throw failed.reason;
}

/** CPU seconds (user + system) a process has used so far, from /proc (Linux). */
export function cpuSecondsOf(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  const fields =
    readFileSync(`/proc/${String(pid)}/stat`, 'utf8')
      .split(') ')[1]
      ?.split(' ') ?? [];
  const ticksPerSecond = 100; // USER_HZ on Linux
  return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond;
}

/** The machine's busy and total CPU time so far, from /proc/stat (Linux), in ticks. */
function machineTicks(): { busy: number; total: number } {
  const fields = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '')
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  const total = fields.reduce((sum, n) => sum + n, 0);
  // idle and iowait
  const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
  return { busy: total - idle, total };
}

/** Runs `fn` and tells how busy the whole machine was meanwhile (0–1, all cores). */
export async function withMachineLoad<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const before = machineTicks();
  const result = await fn();
  const after = machineTicks();
  const busy = (after.busy - before.busy) / Math.max(1, after.total - before.total);
  return [result, Math.round(busy * 100) / 100];
}

/**
 * POSTs a signed audio.ready for each id to the receiver on `port`, 50 at a time over one
 * keep-alive pool, as the provider would; resolves with how many were not answered 2xx.
 */
export async function postDeliveries(
  port: number,
  ids: readonly string[],
  cdnOrigin: string,
): Promise<number> {
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections: 50 });
  let next = 0;
  let non2xx = 0;
  try {
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        while (next < ids.length) {
          const { body, headers } = signedDelivery(ids[next++] ?? '', cdnOrigin);
          const res = await pool.request({ method: 'POST', path: '/webhooks', headers, body });
          await res.body.dump();
          if (res.statusCode >= 300) non2xx++;
        }
      }),
    );
  } finally {
    await pool.close();
  }
  return non2xx;
}

/** Empties the bench's Redis and compacts its append-only file, and waits until it is done. */
export async function freshRedis(redis: Redis): Promise<void> {
  await redis.flushall();
  const rewriting = async () =>
    /^aof_rewrite_(in_progress|scheduled):1/m.test(await redis.info('persistence'));
  // A rewrite already running must end before another can start.
  while (await rewriting()) await sleep(100);
  await redis.bgrewriteaof();
  while (await rewriting()) await sleep(100);
}

/**
 * Forks `script`, sends it `message`, and resolves with its one answer and its CPU seconds at
 * that moment (start-up included), once it has exited. A child that exits without answering
 * rejects, naming the script, instead of leaving the bench waiting.
 */
export async function forkForAnswer(
  script: string,
  message: Record<string, unknown>,
  options: { execArgv?: string[]; env?: Record<string, string> } = {},
): Promise<{ answer: unknown; cpu: number }> {
  const child = fork(script, [], {
    execArgv: options.execArgv ?? [],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, ...options.env },
  });
  const exited = once(child, 'exit');
  child.send(message);
  const answered = once(child, 'message') as Promise<[unknown]>;
  const first = await Promise.race([answered, exited.then(() => undefined)]);
  if (first === undefined)
    throw new Error(`${script} exited with ${String(child.exitCode)} before answering`);
  const cpu = cpuSecondsOf(child.pid);
  await exited;
  return { answer: first[0], cpu };
}
