import { backoffDelay } from '../jobs/backoff.js';
import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';
import type { ProcessSettings } from '../config/process-settings.js';
import type { ReceiverSettings } from '../config/receiver-settings.js';
import { answerMetricsRequests } from './cluster-metrics.js';

/**
 * Back-off for replacing receiver processes that die soon after they start (one that crashes on
 * every request was re-forked at once, for ever): the first replacement is immediate, each
 * further early death doubles the wait, up to the cap. A process that lived `stableMs` resets it.
 * The `giveUp`-th early death in a row stops the receiver (exit 1): a crash loop ends, and the
 * orchestrator's restart, with its own back-off, shows it.
 */
export const RESTART_BACKOFF = {
  firstMs: 1_000,
  maxMs: 30_000,
  stableMs: 30_000,
  giveUp: 5,
} as const;

/**
 * How a receiver process exits when its start is refused (a setting, the port, Redis's eviction
 * policy: main.ts's one-line errors), sysexits' EX_CONFIG: the primary stops the receiver rather
 * than start the same refusal again. The primary itself still exits 1.
 */
export const START_REFUSED_EXIT_CODE = 78;

/** The message a receiver process gets instead of a signal: shut down gracefully, once. */
export const SHUTDOWN_MESSAGE = 'audio-webhooks:shutdown';

/**
 * What a receiver process tells its primary once it listens for messages. One sent to it before
 * is lost (node:cluster keeps none for a process with no listener): a primary that is stopping
 * asks again when it hears this, so a stop asked while the processes load still reaches each.
 */
export const HEARING_MESSAGE = 'audio-webhooks:hearing';

/**
 * In a receiver process, first thing at start: listens for its primary's asks to shut down and
 * says so (HEARING_MESSAGE). Returns `onAsked(handler)`, for once the process is up: `handler`
 * runs at once if the primary asked meanwhile, and at each ask after.
 */
export function hearPrimary(): (handler: () => void) => void {
  let asked = false;
  let handler: (() => void) | undefined;
  process.on('message', (message: unknown) => {
    if (message !== SHUTDOWN_MESSAGE) return;
    asked = true;
    handler?.();
  });
  process.send?.(HEARING_MESSAGE);
  return (run) => {
    handler = run;
    if (asked) run();
  };
}

/**
 * ROLE=web with WEB_CONCURRENCY > 1: this primary process serves nothing itself; it forks that
 * many receiver processes, which share the port (node:cluster hands them the connections), and:
 * - a process whose start is refused (START_REFUSED_EXIT_CODE: port taken, a setting…) stops
 *   them all: exit 1; so does any that exits by itself before the first generation all listened;
 * - any other that dies is replaced, killed by a signal while starting too (the OOM killer, an
 *   operator), with RESTART_BACKOFF's delay and bound;
 * - SIGTERM/SIGINT: each process shuts down gracefully (stops accepting, /readyz 503, finishes
 *   what it has, closes Redis); the primary exits 0 once they all did. A second signal kills them.
 * If the primary itself is killed, node:cluster makes each child exit at once: no orphan keeps the
 * port. Signals reach the children by message, so one sent to the whole process group (Ctrl-C,
 * systemd) is still a single, graceful request.
 */
export function runReceiverCluster(
  config: Pick<ProcessSettings, 'webConcurrency'> & Pick<ReceiverSettings, 'port'>,
  logger: Logger,
): void {
  /** Each live process, and whether it got as far as listening. */
  const started = new Map<Worker, { listening: boolean; at: number }>();
  answerMetricsRequests(logger);
  let stopping = false;
  let exitCode = 0;
  /** Deaths in a row of processes that did not live RESTART_BACKOFF.stableMs. */
  let earlyDeaths = 0;
  /** Processes that listened so far: the receiver is up once the first generation all did. */
  let listenedSoFar = 0;
  const pendingForks = new Set<NodeJS.Timeout>();

  const fork = (replacing?: number) => {
    const worker = cluster.fork();
    started.set(worker, { listening: false, at: Date.now() });
    if (replacing !== undefined)
      logger.info({ pid: worker.process.pid, replacing }, 'receiver process forked');
    // A process that is exiting can fail a message or a signal (EPIPE, ESRCH); its 'exit' says
    // what happened. Unhandled, that 'error' would bring down the primary with a stack trace.
    worker.on('error', (error: Error) => {
      logger.debug({ pid: worker.process.pid, err: error }, 'receiver process unreachable');
    });
    worker.on('message', (message: unknown) => {
      if (message === HEARING_MESSAGE && stopping) askToStop(worker);
    });
  };
  cluster.on('listening', (worker) => {
    const state = started.get(worker);
    if (state && !state.listening) listenedSoFar += 1;
    if (state) state.listening = true;
  });
  // Listened for before the first fork and the line that says so: a signal before any listener
  // kills the primary at once (the default action), leaving no graceful stop.
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: killing the receiver processes now');
      for (const worker of started.keys()) worker.process.kill('SIGKILL');
      process.exit(1);
    }
    logger.info({ signal, processes: started.size }, 'shutting down the receiver processes');
    stopAll();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  for (let i = 0; i < config.webConcurrency; i++) fork();
  logger.info(
    { processes: config.webConcurrency, port: config.port },
    'receiver processes starting (WEB_CONCURRENCY)',
  );

  cluster.on('exit', (worker, code, signal) => {
    const state = started.get(worker);
    const listened = state?.listening ?? false;
    const lived = Date.now() - (state?.at ?? 0);
    started.delete(worker);
    // (signal is null on a normal exit, whatever the typings say)
    const abnormal = code !== 0 || Boolean(signal);
    // The exit code tells how the shutdown went: a process replaced earlier does not count.
    if (stopping) {
      if (abnormal) exitCode = 1;
    } else if (!listened && startRefused(code, signal, listenedSoFar < config.webConcurrency)) {
      // It would be refused the same way again: a restart loop would hide why.
      exitCode = 1;
      logger.fatal(
        { pid: worker.process.pid, code, signal },
        'a receiver process failed at start-up; stopping the others',
      );
      stopAll();
    } else {
      earlyDeaths = lived >= RESTART_BACKOFF.stableMs ? 0 : earlyDeaths + 1;
      if (earlyDeaths >= RESTART_BACKOFF.giveUp) {
        exitCode = 1;
        logger.fatal(
          { pid: worker.process.pid, code, signal, livedMs: lived, deathsInARow: earlyDeaths },
          'receiver processes keep dying soon after they start; stopping the others',
        );
        stopAll();
      } else replace(worker.process.pid, { code, signal, livedMs: lived, listened });
    }
    if (stopping && started.size === 0) process.exit(exitCode);
  });

  /** Forks a process in place of `pid`, which died as `death` says, after the backoff's wait. */
  function replace(
    pid: number | undefined,
    death: { code: number; signal: string; livedMs: number; listened: boolean },
  ) {
    // The first early death is replaced at once; from the second, the one backoff formula.
    const restartInMs =
      earlyDeaths <= 1 ? 0 : backoffDelay(earlyDeaths - 1, { ...RESTART_BACKOFF, jitter: 'none' });
    logger.error({ pid, ...death, restartInMs }, 'receiver process died; replacing it');
    const timer = setTimeout(() => {
      pendingForks.delete(timer);
      if (!stopping) fork(pid);
    }, restartInMs);
    pendingForks.add(timer);
  }

  function stopAll() {
    stopping = true;
    for (const timer of pendingForks) clearTimeout(timer);
    pendingForks.clear();
    for (const worker of started.keys()) askToStop(worker);
    if (started.size === 0) process.exit(exitCode);
  }

  /** Asks one process to shut down gracefully (once it hears: HEARING_MESSAGE asks again). */
  function askToStop(worker: Worker) {
    if (worker.isConnected())
      worker.send(SHUTDOWN_MESSAGE, (error: Error | null) => {
        // Its channel closed on the way (it is exiting already): a signal still reaches it.
        if (error) worker.process.kill('SIGTERM');
      });
    else worker.kill('SIGTERM');
  }
}

/**
 * Whether a process that died before it listened ends the receiver: its start was refused, or it
 * exited by itself while the receiver was still coming up. One killed by a signal, or one that
 * crashed once the receiver was up, is replaced.
 */
function startRefused(code: number | null, signal: string | null, comingUp: boolean): boolean {
  if (signal !== null) return false;
  return code === START_REFUSED_EXIT_CODE || comingUp;
}
