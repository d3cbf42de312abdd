/**
 * The receiver's sections: ingestion per core against two baselines, latency at a constant
 * 1,000 deliveries/s against the naive receiver, all cores against one. Figures that move with
 * the hour are medians of alternated rounds: each kind runs once per round, the order rotated, so
 * none always follows the same one. Every receiver runs at RECEIVER_NICE.
 */
import type { ChildProcess } from 'node:child_process';
import type { Redis } from 'ioredis';
import { cpusInQuota } from '../src/util/cpu-quota.js';
import { freePort } from '../harness/private-redis.js';
import { runLoad, runOpenLoop, type LoadResult } from './ingestion.js';
import {
  alternated,
  BENCH_SECRET,
  cpuSecondsOf,
  forkBaseline,
  ratio,
  spawnService,
  stop,
  withMachineLoad,
} from './lib.js';
import { exact, medians, type Section, type Target } from './section.js';
import { countLost } from './verify-stored.js';

const CONNECTIONS = 50;
const WARMUP_SECONDS = 3;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const OPEN_LOOP_RATE = 1000;
const OPEN_LOOP_SECONDS = 20;
const OPEN_LOOP_CONNECTIONS = 200;
const ROUNDS = [
  ['a', 'b', 'c', 'n'],
  ['b', 'c', 'n', 'a'],
  ['n', 'a', 'b', 'c'],
] as const;
/**
 * The niceness every receiver of these sections runs at. The load generator stands for the
 * provider, whose machines are its own; here it shares the cores with what it measures, and the
 * kernel gives each busy thread an equal share, so each receiver process added takes CPU from
 * the generator measuring it. At nice 5 a receiver yields to the generator and to Redis when the
 * cores are contended; "per core" reads the receiver's own CPU time, which niceness leaves as is.
 */
const RECEIVER_NICE = 5;

interface Measured extends LoadResult {
  /** Deliveries answered per CPU second the serving process used: the per-core figure. */
  readonly perCpuSecond: number;
}

/** The medians of a kind's rounds, and its failures summed over them. */
export interface Figures {
  readonly acceptedPerSecond: number;
  readonly perCpuSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly p999Ms: number;
  readonly failed: number;
  /** Each round's figure the target compares (per CPU second, or p99.9), in the order run. */
  readonly rounds: readonly number[];
}

/**
 * Closed loop at 50 connections; `pid` is the serving process, whose CPU time is read around the
 * measured run, so "per core" does not depend on how much CPU the load generator took.
 */
export async function measure(name: string, url: string, pid?: number): Promise<Measured> {
  process.stderr.write(
    `ingestion ${name}: ${WARMUP_SECONDS} s warm-up, ${SECONDS} s at ${CONNECTIONS} connections\n`,
  );
  await runLoad(url, { connections: CONNECTIONS, durationSeconds: WARMUP_SECONDS });
  const cpuBefore = cpuSecondsOf(pid);
  const result = await runLoad(url, { connections: CONNECTIONS, durationSeconds: SECONDS });
  const cpu = cpuSecondsOf(pid) - cpuBefore;
  return { ...result, perCpuSecond: Math.round((result.acceptedPerSecond * SECONDS) / cpu) };
}

/** Open loop: a constant OPEN_LOOP_RATE deliveries/s for OPEN_LOOP_SECONDS, after a warm-up. */
async function measureAtRate(name: string, url: string): Promise<LoadResult> {
  process.stderr.write(`latency ${name}: ${OPEN_LOOP_RATE}/s for ${OPEN_LOOP_SECONDS} s\n`);
  const options = { connections: OPEN_LOOP_CONNECTIONS, rate: OPEN_LOOP_RATE };
  await runOpenLoop(url, { ...options, durationSeconds: WARMUP_SECONDS });
  return runOpenLoop(url, { ...options, durationSeconds: OPEN_LOOP_SECONDS });
}

function figuresOf(rounds: readonly LoadResult[], target: (round: Measured) => number): Figures {
  const m = medians(rounds as readonly Measured[], [
    'acceptedPerSecond',
    'perCpuSecond',
    'p50Ms',
    'p99Ms',
    'p999Ms',
  ]);
  return {
    acceptedPerSecond: m.acceptedPerSecond ?? NaN,
    perCpuSecond: m.perCpuSecond ?? NaN,
    p50Ms: m.p50Ms ?? NaN,
    p99Ms: m.p99Ms ?? NaN,
    p999Ms: m.p999Ms ?? NaN,
    failed: rounds.reduce((sum, r) => sum + r.non2xx + r.errors + r.timeouts, 0),
    rounds: (rounds as readonly Measured[]).map(target),
  };
}

/**
 * The kinds of receiver, each on a port of its own, running together, stopped together: the
 * service in one process, the two single-process baselines, and (`withMany`) the service in as
 * many processes as the CPUs in this container's quota (WEB_CONCURRENCY=auto).
 */
async function receivers(env: Record<string, string>, prefix: string, withMany = true) {
  const ports = {
    a: await freePort(),
    b: await freePort(),
    c: await freePort(),
    n: await freePort(),
  };
  const started: ChildProcess[] = [];
  try {
    const at = (port: number) => ({ ...env, PORT: String(port) });
    const web = { ROLE: 'web' };
    // One receiver process, to compare per core with the single-process baselines.
    const one = { ...web, WEB_CONCURRENCY: '1', QUEUE_PREFIX: `${prefix}-a` };
    started.push(await spawnService({ ...at(ports.a), ...one }, RECEIVER_NICE));
    started.push(await forkBaseline('empty-receiver', at(ports.b), RECEIVER_NICE));
    const naive = { ...at(ports.c), QUEUE_PREFIX: `${prefix}-c` };
    started.push(await forkBaseline('naive-receiver', naive, RECEIVER_NICE));
    const many = { ...at(ports.n), ...web, QUEUE_PREFIX: `${prefix}-n` };
    if (withMany) started.push(await spawnService(many, RECEIVER_NICE));
  } catch (error) {
    await Promise.all(started.map(stop));
    throw error;
  }
  const [a, b, c] = started as [ChildProcess, ChildProcess, ChildProcess];
  return {
    url: (kind: keyof typeof ports) => `http://127.0.0.1:${ports[kind]}/webhooks`,
    pid: { a: a.pid, b: b.pid, c: c.pid },
    stop: () => Promise.all(started.map(stop)),
  };
}

const NAMES = {
  a: '(a) receiver',
  b: '(b) empty baseline',
  c: '(c) naive baseline',
  n: `receiver, ${cpusInQuota()} processes`,
} as const;

export async function runIngestion(redisUrl: string, redis: Redis) {
  const env = { REDIS_URL: redisUrl, WEBHOOK_SECRETS: BENCH_SECRET, LOG_LEVEL: 'info' };

  const closed = await receivers(env, 'bench');
  // The share of the machine busy while each kind ran, summed over its rounds.
  const busy = { a: 0, n: 0 };
  const busyWhile = async (kind: 'a' | 'n') => {
    const [measured, share] = await withMachineLoad(() =>
      // The cluster's CPU is its processes' together, not its primary's: no per-core figure.
      measure(NAMES[kind], closed.url(kind), kind === 'a' ? closed.pid.a : undefined),
    );
    busy[kind] += share / ROUNDS.length;
    return measured;
  };
  const closedRounds = await alternated(
    {
      a: () => busyWhile('a'),
      b: () => measure(NAMES.b, closed.url('b'), closed.pid.b),
      c: () => measure(NAMES.c, closed.url('c'), closed.pid.c),
      n: () => busyWhile('n'),
    },
    ROUNDS,
  ).finally(() => closed.stop());
  const acceptedIds = closedRounds.a.flatMap((round) => round.acceptedIds);
  const lost = await countLost(redis, 'bench-a', acceptedIds);

  const open = await receivers(env, 'bench-rate', false);
  const openRounds = await alternated(
    {
      a: () => measureAtRate(NAMES.a, open.url('a')),
      c: () => measureAtRate(NAMES.c, open.url('c')),
    },
    [
      ['a', 'c'],
      ['c', 'a'],
      ['a', 'c'],
    ],
  ).finally(() => open.stop());

  const perCpu = (round: Measured) => round.perCpuSecond;
  const p999 = (round: Measured) => round.p999Ms;
  const a = figuresOf(closedRounds.a, perCpu);
  return {
    connections: CONNECTIONS,
    seconds: SECONDS,
    a,
    b: figuresOf(closedRounds.b, perCpu),
    c: figuresOf(closedRounds.c, perCpu),
    acceptedChecked: acceptedIds.length,
    lost,
    openLoop: {
      rate: OPEN_LOOP_RATE,
      seconds: OPEN_LOOP_SECONDS,
      connections: OPEN_LOOP_CONNECTIONS,
      a: figuresOf(openRounds.a, p999),
      c: figuresOf(openRounds.c, p999),
    },
    cluster: {
      processes: cpusInQuota(),
      one: a.acceptedPerSecond,
      many: figuresOf(closedRounds.n, perCpu).acceptedPerSecond,
      /** Each round's accepted/s, in the order run; `one` and `many` are their medians. */
      rounds: {
        one: closedRounds.a.map((round) => round.acceptedPerSecond),
        many: closedRounds.n.map((round) => round.acceptedPerSecond),
      },
      busyWithOne: Math.round(busy.a * 100) / 100,
      busyWithMany: Math.round(busy.n * 100) / 100,
    },
  };
}

export type Ingestion = Awaited<ReturnType<typeof runIngestion>>;

export function ingestionSections(ingest: Ingestion): Section<unknown>[] {
  const row = (name: string, r: Figures) =>
    `| ${name} | ${r.acceptedPerSecond} | ${r.perCpuSecond} | ${r.p50Ms} | ${r.p99Ms} | ${r.failed} | ${r.rounds.join(', ')} |`;
  const rateRow = (name: string, r: Figures) =>
    `| ${name} | ${r.acceptedPerSecond} | ${r.p50Ms} | ${r.p99Ms} | ${r.p999Ms} | ${r.failed} | ${r.rounds.join(', ')} |`;
  const { a, b, c, openLoop: open, cluster } = ingest;
  const perCore: Target[] = [
    [
      'per core: receiver ≥ 1.0 × naive (deliveries per CPU second of the serving process)',
      a.perCpuSecond >= c.perCpuSecond,
      `${exact(a.perCpuSecond, c.perCpuSecond)} (${a.perCpuSecond} / ${c.perCpuSecond})`,
    ],
    [
      '0 lost of those answered 2xx',
      ingest.lost === 0,
      `${ingest.lost} of ${ingest.acceptedChecked}`,
    ],
  ];
  const latency: Target[] = [
    [
      `at ${open.rate}/s for ${open.seconds} s: receiver's p99 and p99.9 each ≤ the naive receiver's`,
      open.a.p99Ms <= open.c.p99Ms && open.a.p999Ms <= open.c.p999Ms && open.a.failed === 0,
      `p99 ${open.a.p99Ms} / ${open.c.p99Ms} ms, p99.9 ${open.a.p999Ms} / ${open.c.p999Ms} ms (p50 ${open.a.p50Ms} / ${open.c.p50Ms} ms), ${open.a.failed} failed`,
    ],
  ];
  const allCores: Target[] = [
    [
      `all cores: ${cluster.processes} processes ≥ 1 process`,
      cluster.many >= cluster.one,
      `${cluster.many} / ${cluster.one} per s = ${exact(cluster.many, cluster.one)}`,
    ],
  ];
  return [
    {
      title: `Ingestion (${ingest.connections} connections, ${ingest.seconds} s, unique signed audio.ready)`,
      figures: ingest,
      lines: [
        `Medians of ${ROUNDS.length} alternated rounds; the last column is each round's deliveries per CPU second.`,
        '',
        '| target (one process) | accepted/s | per CPU second | p50 ms | p99 ms | non-2xx + errors | rounds |',
        '|---|---|---|---|---|---|---|',
        row(NAMES.a, a),
        row(NAMES.b, b),
        row(NAMES.c, c),
        '',
        `a/b = ${ratio(a.acceptedPerSecond, b.acceptedPerSecond)}, a/c = ${ratio(a.acceptedPerSecond, c.acceptedPerSecond)}; per core a/c = ${ratio(a.perCpuSecond, c.perCpuSecond)}; answered 2xx and checked in Redis: ${ingest.acceptedChecked}, lost: ${ingest.lost}`,
      ],
      targets: perCore,
    },
    {
      title: `Latency at ${open.rate} deliveries/s for ${open.seconds} s (${open.connections} connections)`,
      figures: ingest,
      lines: [
        "Medians of three alternated rounds; the last column is each round's p99.9 in ms.",
        '',
        '| target (one process) | accepted/s | p50 ms | p99 ms | p99.9 ms | non-2xx + errors | rounds |',
        '|---|---|---|---|---|---|---|',
        rateRow(NAMES.a, open.a),
        rateRow(NAMES.c, open.c),
      ],
      targets: latency,
    },
    {
      title: `All cores: WEB_CONCURRENCY=${cluster.processes} against 1`,
      figures: ingest,
      lines: [
        `${cluster.many}/s against ${cluster.one}/s (medians of the ingestion section's alternated rounds: ${cluster.rounds.many.join(', ')} against ${cluster.rounds.one.join(', ')}): ratio ${ratio(cluster.many, cluster.one)}; the whole machine (receivers at nice ${RECEIVER_NICE}, the load generator, Redis) was ${Math.round(cluster.busyWithOne * 100)} % busy in the one-process rounds, ${Math.round(cluster.busyWithMany * 100)} % with ${cluster.processes}`,
      ],
      targets: allCores,
    },
  ];
}
