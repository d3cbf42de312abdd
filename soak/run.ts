/**
 * `npm run soak [-- --minutes N --seed S --store local|s3 --redis single|cluster --report FILE]`
 * (docs/reliability.md): the whole system on this machine under seeded random faults, then the
 * checker's verdict on every delivery the sandbox sent. Exit 0: nothing lost, nothing unexpected;
 * 1: something lost or unexpected; 2: the soak itself could not run; 3: the run is void (its
 * figures mean nothing).
 *
 * The order: plan (traffic and faults, from the seed alone), start the system, send and break
 * for `--minutes`, let the backlog drain (bounded), collect what every place holds, check,
 * report, stop everything.
 */
import { randomInt } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseSoakArgs, UsageError, USAGE, type SoakOptions } from './args.js';
import { check } from './checker.js';
import { collect } from './collect.js';
import { drain } from './drain.js';
import { countByKind, faultKindsFor, planFaults } from './fault-plan.js';
import { splitLatency } from './latency.js';
import { mulberry32 } from './prng.js';
import { buildReport, reportLines } from './report.js';
import { runFaults } from './run-faults.js';
import { RECEIVER_REPLACED, startSystem, type System } from './system.js';
import { sendTraffic } from './traffic.js';
import { planTraffic, type PlannedSend } from './traffic-plan.js';

/** The sender's whole retry schedule, 30 s + 5 min + 30 min + 2 h + 6 h, before compression. */
const RETRY_WINDOW_MS = 30_930_000;

const began = Date.now();
/** A line of progress, with the seconds since the soak began. */
const say = (line: string) => {
  process.stdout.write(`[${((Date.now() - began) / 1000).toFixed(1).padStart(6)} s] ${line}\n`);
};

/** Room for everything a run stores: its audio, its archive (big bodies), and slack. */
function storeBytesFor(plan: readonly PlannedSend[]): number {
  let bytes = 256 * 1024 ** 2;
  for (const send of plan) {
    if (send.kind === 'ready' || send.kind === 'custom') bytes += send.file.size + 4096;
    if (send.kind === 'big') bytes += send.file.size + 2 * 1024 ** 2;
    if (send.kind === 'batch') bytes += send.items.length * 400 * 1024;
  }
  return Math.ceil(bytes * 1.3);
}

async function soak(options: SoakOptions): Promise<number> {
  const durationMs = Math.round(options.minutes * 60_000);
  const windowMs = RETRY_WINDOW_MS * options.timeScale;
  const random = mulberry32(options.seed);
  const plan = planTraffic(random.fork(), {
    durationMs,
    rate: options.rate,
    overLimitUntilMs: durationMs - 1.3 * windowMs,
  });
  const faultPlan = planFaults(random.fork(), {
    ...options.faults,
    endMs: durationMs - 2_000,
  });
  const kinds = faultKindsFor(options.redis);
  say(
    `soak: seed ${options.seed}: ${plan.length} sends planned over ${options.minutes} min, ${faultPlan.length} faults (${JSON.stringify(countByKind(faultPlan, kinds))})`,
  );
  const work = mkdtempSync(join(tmpdir(), 'aw-soak-'));
  const logs = resolve(
    dirname(options.report),
    `soak-${options.seed}-${options.store}${options.redis === 'cluster' ? '-cluster' : ''}-logs`,
  );
  // The logs of this run only: an earlier run of the same seed and store leaves its own behind.
  rmSync(logs, { recursive: true, force: true });
  let system: System | undefined;
  const stop = async () => {
    await system?.shutdown();
    system = undefined;
    rmSync(work, { recursive: true, force: true });
  };
  const interrupted = () => {
    say('soak: interrupted; stopping everything it started');
    void stop().finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  try {
    system = await startSystem(options, { work, logs }, storeBytesFor(plan), say);
    say(
      `soak: system up (${system.filterActive ? 'FORWARD_CONFIG with a filter on amqp' : 'FORWARD_URLS: this build does not read FORWARD_CONFIG, so no filter'}); traffic for ${options.minutes} min`,
    );
    const startedAt = Date.now();
    const stopAt = startedAt + durationMs;
    const [traffic, faults] = await Promise.all([
      sendTraffic(plan, { seed: options.seed, ...system, startedAt, stopAt }),
      runFaults(faultPlan, system, { startedAt, stopAt, say }),
    ]);
    const lastFaultEnd = Math.max(startedAt, ...faults.injected.map((f) => f.endMs));
    say(`soak: traffic and faults over; draining (at most ${options.drainSeconds} s)`);
    const drained = await drain(system, options.drainSeconds * 1000);
    say(`soak: ${drained.drained ? 'drained' : 'not drained'}; collecting`);
    const collected = await collect(system, traffic);
    const verdict = check(collected.observations);
    const report = buildReport({
      seed: options.seed,
      store: options.store,
      fsync: options.fsync,
      minutes: options.minutes,
      startedAt,
      endedAt: Date.now(),
      verdict,
      faults: faults.injected,
      latency: splitLatency(
        collected.attempts,
        faults.injected.map((f) => ({ startMs: f.startMs, endMs: f.endMs })),
      ),
      drain: {
        drained: drained.drained,
        seconds_after_last_fault: Math.round((drained.atMs - lastFaultEnd) / 100) / 10,
        pending_at_cutoff: Object.fromEntries(
          Object.entries(drained.pending).filter(([, n]) => n > 0),
        ),
      },
      restarts: {
        ...system.restarts,
        receiver_processes_replaced: system.receiver.count(RECEIVER_REPLACED),
      },
      extra: {
        traffic: {
          sends: traffic.sends,
          deliveries_requested: traffic.requested,
          refused_by_the_sandbox: traffic.refusedByTheSandbox,
        },
        filter: system.filterActive
          ? { active: true, destination: 'amqp', config: 'FORWARD_CONFIG' }
          : { active: false, why: 'this build does not read FORWARD_CONFIG: FORWARD_URLS used' },
        settings: {
          redis: options.redis,
          time_scale: options.timeScale,
          retry_window_s: Math.round(windowMs / 1000),
          rate_per_s: options.rate,
          drain_bound_s: options.drainSeconds,
          overrides: system.overrides,
        },
        planned_faults_by_kind: countByKind(faultPlan, kinds),
        faults_not_injected_by_request: kinds.filter((k) => !options.faults.kinds.includes(k)),
        faults_skipped: faults.skipped,
        fault_errors: faults.errors,
        http_requests_by_mode: system.http.requests,
        http_bad_signatures: system.http.badSignatures.slice(0, 20),
        cdn_requests_by_mode: system.cdn.served,
        store_strays: collected.contents.strays.slice(0, 50),
        unreadable_archive_entries: collected.contents.unreadableArchive,
        failed_jobs: collected.failedJobs.slice(0, 50),
        problems: collected.problems,
        logs,
      },
    });
    mkdirSync(dirname(resolve(options.report)), { recursive: true });
    writeFileSync(options.report, `${JSON.stringify(report, null, 2)}\n`);
    for (const line of reportLines(report)) say(line);
    say(`soak: report written to ${options.report}; logs in ${logs}`);
    if (verdict.void) return 3;
    return verdict.lost > 0 || verdict.unexpected > 0 ? 1 : 0;
  } finally {
    say('soak: stopping everything');
    await stop();
  }
}

let options: SoakOptions;
try {
  options = parseSoakArgs(process.argv.slice(2), () => randomInt(0, 2 ** 32 - 1));
} catch (error: unknown) {
  process.stderr.write(
    `soak: ${error instanceof UsageError ? error.message : String(error)}\n${USAGE}\n`,
  );
  process.exit(2);
}
soak(options).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(
      `soak: could not run: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(2);
  },
);
