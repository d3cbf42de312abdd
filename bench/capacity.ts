import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { archivedEntries } from '../harness/archive-entries.js';
import type { LocalCdn } from '../harness/local-cdn.js';
import { freePort, startPrivateRedis } from '../harness/private-redis.js';
import { cpuSecondsOf, postDeliveries, spawnService, stop, watchSettledJobs } from './lib.js';

/** What one side of the pipeline asks of Redis, per delivery. */
export interface RedisShare {
  /** Commands by name per delivery (commands run inside BullMQ's scripts included). */
  readonly commandsPerDelivery: Readonly<Record<string, number>>;
  /** Lua scripts (BullMQ's, the dedupe's) run per delivery: EVALSHA and EVAL calls. */
  readonly scriptsPerDelivery: number;
  readonly bytesInPerDelivery: number;
  readonly bytesOutPerDelivery: number;
  /** Redis's own CPU time (user + system) per 1,000 deliveries, ms. */
  readonly redisCpuMsPer1000: number;
  /** The service process's CPU per delivery, ms. */
  readonly processCpuMsPerDelivery: number;
}

export interface CapacityResult {
  readonly deliveries: number;
  readonly receiver: RedisShare;
  readonly worker: RedisShare;
  readonly bytes: {
    /** MEMORY USAGE of one dedupe key (kept DEDUPE_TTL_SECONDS). */
    readonly dedupeKey: number;
    /** MEMORY USAGE of a waiting job, and of a completed one (kept a day, at most 10,000). */
    readonly waitingJob: number;
    readonly completedJob: number;
    /** used_memory growth per delivery while they all waited. */
    readonly usedMemoryPerWaitingDelivery: number;
    /** An archive entry's bytes (in the audio store, not in Redis): the files' over the entries. */
    readonly archiveEntry: number;
  };
  /** Deliveries per second one Redis core carries, receiver and worker together. */
  readonly redisCeilingPerSecond: number;
}

const SCRIPT_COMMANDS = new Set(['evalsha', 'eval', 'fcall']);

async function snapshot(redis: Redis) {
  const [commandstats, stats, cpu] = await Promise.all([
    redis.info('commandstats'),
    redis.info('stats'),
    redis.info('cpu'),
  ]);
  const commands: Record<string, number> = {};
  for (const match of commandstats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm))
    commands[match[1] ?? ''] = Number(match[2]);
  const field = (text: string, name: string) =>
    Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(text)?.[1] ?? NaN);
  return {
    commands,
    bytesIn: field(stats, 'total_net_input_bytes'),
    bytesOut: field(stats, 'total_net_output_bytes'),
    cpu: field(cpu, 'used_cpu_user') + field(cpu, 'used_cpu_sys'),
  };
}

async function share(
  redis: Redis,
  deliveries: number,
  processCpuSeconds: () => number,
  work: () => Promise<void>,
): Promise<RedisShare> {
  await redis.config('RESETSTAT');
  const before = await snapshot(redis);
  const cpuBefore = processCpuSeconds();
  await work();
  const cpu = processCpuSeconds() - cpuBefore;
  const after = await snapshot(redis);
  const per = (n: number) => Math.round((n / deliveries) * 100) / 100;
  const commandsPerDelivery: Record<string, number> = {};
  let scripts = 0;
  for (const [name, count] of Object.entries(after.commands)) {
    const made = count - (before.commands[name] ?? 0);
    // The stats of the snapshot itself and of the bench's own listener are not the service's.
    if (made <= 0 || name === 'info' || name === 'config') continue;
    if (per(made) > 0) commandsPerDelivery[name] = per(made);
    if (SCRIPT_COMMANDS.has(name)) scripts += made;
  }
  return {
    commandsPerDelivery,
    scriptsPerDelivery: per(scripts),
    bytesInPerDelivery: Math.round((after.bytesIn - before.bytesIn) / deliveries),
    bytesOutPerDelivery: Math.round((after.bytesOut - before.bytesOut) / deliveries),
    redisCpuMsPer1000: Math.round(((after.cpu - before.cpu) / deliveries) * 1000 * 1000),
    processCpuMsPerDelivery: Math.round((cpu / deliveries) * 1000 * 100) / 100,
  };
}

/**
 * The capacity model's figures (docs/capacity.md): a fresh Redis of its own (append-only, as in
 * production), a receiver and a worker process; `deliveries` unique audio.ready deliveries
 * posted first with no worker running (the receiver's share of Redis), then the worker started
 * and run until every job completed (the worker's share), with the sizes of what stays behind.
 */
export async function runCapacity(cdn: LocalCdn, deliveries = 5000): Promise<CapacityResult> {
  const redisServer = await startPrivateRedis({ persistent: true });
  const redis = new Redis(redisServer.url);
  const audioDir = mkdtempSync(join(tmpdir(), 'aw-bench-capacity-'));
  const caFile = join(audioDir, '..', `aw-bench-ca-${randomUUID()}.pem`);
  writeFileSync(caFile, cdn.ca);
  const audio = Buffer.alloc(64 * 1024, 7);
  cdn.fallback((_req, res) => {
    res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': audio.length }).end(audio);
  });
  const prefix = 'capacity';
  const port = await freePort();
  const common = {
    REDIS_URL: redisServer.url,
    QUEUE_PREFIX: prefix,
    LOG_LEVEL: 'warn',
    CDN_URL: cdn.origin,
    NODE_EXTRA_CA_CERTS: caFile,
    AUDIO_DIR: audioDir,
  };
  const receiver = await spawnService({
    ...common,
    ROLE: 'web',
    WEB_CONCURRENCY: '1',
    PORT: String(port),
  });
  let worker: Awaited<ReturnType<typeof spawnService>> | undefined;
  try {
    process.stderr.write(`capacity: ${deliveries} deliveries, receiver alone, then the worker\n`);
    const ids = Array.from({ length: deliveries }, () => randomUUID());
    const usedBefore = await usedMemory(redis);
    const receiverShare = await share(
      redis,
      deliveries,
      () => cpuSecondsOf(receiver.pid),
      async () => {
        await postDeliveries(port, ids, cdn.origin);
      },
    );
    const usedWaiting = await usedMemory(redis);
    const [waitingJobId] = await redis.lrange(`${prefix}:deliveries:wait`, 0, 0);
    const dedupeKey = (await redis.keys(`${prefix}:seen:*`))[0] ?? '';
    const bytes = {
      dedupeKey: Number(await redis.memory('USAGE', dedupeKey)),
      waitingJob: Number(await redis.memory('USAGE', `${prefix}:deliveries:${waitingJobId ?? ''}`)),
      usedMemoryPerWaitingDelivery: Math.round((usedWaiting - usedBefore) / deliveries),
    };

    const jobs = await watchSettledJobs(redisServer.url, prefix, deliveries);
    const workerShare = await share(
      redis,
      deliveries,
      () => (worker === undefined ? 0 : cpuSecondsOf(worker.pid)),
      async () => {
        worker = await spawnService({
          ...common,
          ROLE: 'worker',
          WORKER_HEALTH_PORT: String(await freePort()),
          DOWNLOAD_ALLOW_PRIVATE_IPS: 'true',
        });
        await jobs.done;
      },
    );
    await jobs.close();
    const completedJob = Number(
      await redis.memory('USAGE', `${prefix}:deliveries:${waitingJobId ?? ''}`),
    );
    // The archive's bytes per entry: its files' bytes over the entries they hold (a segment
    // holds many; counting `.json` files found none once entries became lines).
    const archive = join(audioDir, '.archive');
    const archiveBytes = existsSync(archive)
      ? readdirSync(archive, { recursive: true, encoding: 'utf8' })
          .map((name) => statSync(join(archive, name)))
          .filter((stat) => stat.isFile())
          .reduce((sum, stat) => sum + stat.size, 0)
      : 0;
    const archived = archivedEntries(archive).length;
    const archiveEntry = archived === 0 ? 0 : Math.round(archiveBytes / archived);
    const perDelivery = receiverShare.redisCpuMsPer1000 + workerShare.redisCpuMsPer1000;
    return {
      deliveries,
      receiver: receiverShare,
      worker: workerShare,
      bytes: { ...bytes, completedJob, archiveEntry },
      redisCeilingPerSecond: perDelivery === 0 ? 0 : Math.round((1000 * 1000) / perDelivery),
    };
  } finally {
    if (worker !== undefined) await stop(worker);
    await stop(receiver);
    redis.disconnect();
    await redisServer.stop();
    rmSync(audioDir, { recursive: true, force: true });
    rmSync(caFile, { force: true });
  }
}

async function usedMemory(redis: Redis): Promise<number> {
  const info = await redis.info('memory');
  return Number(/^used_memory:(\d+)/m.exec(info)?.[1] ?? NaN);
}

export function capacityLines(c: CapacityResult): string[] {
  const commands = (share: RedisShare) =>
    Object.entries(share.commandsPerDelivery)
      .sort(([, a], [, b]) => b - a)
      .map(([name, n]) => `${name} ${n}`)
      .join(', ');
  return [
    `${c.deliveries} unique audio.ready deliveries (64 KB, local store) against a Redis of their own:`,
    '',
    '| per delivery | receiver | worker |',
    '|---|---|---|',
    `| Lua scripts run | ${c.receiver.scriptsPerDelivery} | ${c.worker.scriptsPerDelivery} |`,
    `| bytes into / out of Redis | ${c.receiver.bytesInPerDelivery} / ${c.receiver.bytesOutPerDelivery} | ${c.worker.bytesInPerDelivery} / ${c.worker.bytesOutPerDelivery} |`,
    `| Redis CPU per 1,000, ms | ${c.receiver.redisCpuMsPer1000} | ${c.worker.redisCpuMsPer1000} |`,
    `| the process's CPU, ms | ${c.receiver.processCpuMsPerDelivery} | ${c.worker.processCpuMsPerDelivery} |`,
    '',
    `Commands per delivery (INFO commandstats, the commands scripts run included), receiver: ${commands(c.receiver)}`,
    '',
    `Commands per delivery, worker: ${commands(c.worker)}`,
    '',
    `Sizes: a dedupe key ${c.bytes.dedupeKey} B (MEMORY USAGE), a waiting job ${c.bytes.waitingJob} B, a completed job ${c.bytes.completedJob} B, used_memory ${c.bytes.usedMemoryPerWaitingDelivery} B per waiting delivery; an archive entry ${c.bytes.archiveEntry} B on disk. One Redis core: ${c.redisCeilingPerSecond} deliveries/s, receiver and worker together.`,
  ];
}
