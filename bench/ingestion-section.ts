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
  freshRedis,
  spawnService,
  stop,
  withMachineLoad,
} from './lib.js';
import { medians } from './section.js';
import { countLost } from './verify-stored.js';

const CONNECTIONS = 50;
const WARMUP_SECONDS = 3;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const OPEN_LOOP_RATE = 1000;
const OPEN_LOOP_SECONDS = 20;
const OPEN_LOOP_CONNECTIONS = 200;
/**
 * The open loop's rounds: five, each kind first in some, so a p99 (the 200th slowest of 20,000)
 * reads a median of five rounds rather than of three.
 */
const OPEN_ORDERS = [
  ['a', 'c'],
  ['c', 'a'],
  ['a', 'c'],
  ['c', 'a'],
  ['a', 'c'],
] as const;
export const ROUNDS = [
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
export const RECEIVER_NICE = 5;

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
  /** Each round's p99, in the order run (the latency target pairs them round by round). */
  readonly p99Rounds: readonly number[];
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
    p99Rounds: rounds.map((round) => round.p99Ms),
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

export const NAMES = {
  a: '(a) receiver',
  b: '(b) empty baseline',
  c: '(c) naive baseline',
  n: `receiver, ${cpusInQuota()} processes`,
} as const;

/**
 * The open loop's rounds, OPEN_ORDERS: each round on an emptied Redis (the closed loop leaves a
 * few hundred thousand jobs, whose append-only rewrite, a fork of all of them, would land in
 * whichever round runs then) with both receivers started afresh, in the round's order.
 */
async function openLoopRounds(env: Record<string, string>, redis: Redis) {
  const results: Record<'a' | 'c', LoadResult[]> = { a: [], c: [] };
  for (const order of OPEN_ORDERS) {
    await freshRedis(redis);
    const open = await receivers(env, `bench-rate-${results.a.length}`, false);
    try {
      for (const kind of order)
        results[kind].push(await measureAtRate(NAMES[kind], open.url(kind)));
    } finally {
      await open.stop();
    }
  }
  return results;
}

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

  const openRounds = await openLoopRounds(env, redis);

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
