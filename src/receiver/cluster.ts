import { backoffDelay } from '../jobs/backoff.js';
import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';
import type { ProcessSettings } from '../config/process-settings.js';
import type { ReceiverSettings } from '../config/receiver-settings.js';
import { answerMetricsRequests } from './cluster-metrics.js';

/**
 * Back-off for replacing receiver processes that die soon after they start (one that crashes on
 * every request was re-forked at once, for ever): the first replacement is immediate, each
 * further early death doubles the wait, up to the cap. A process that lived STABLE_MS resets it.
 */
export const RESTART_BACKOFF = { firstMs: 1_000, maxMs: 30_000, stableMs: 30_000 } as const;

/** The message a receiver process gets instead of a signal: shut down gracefully, once. */
export const SHUTDOWN_MESSAGE = 'audio-webhooks:shutdown';

/**
 * ROLE=web with WEB_CONCURRENCY > 1: this primary process serves nothing itself; it forks that
 * many receiver processes, which share the port (node:cluster hands them the connections), and:
 * - a process that fails before it listens (port taken, bad CA file…) stops them all: exit 1;
 * - one that dies later is replaced;
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
  const pendingForks = new Set<NodeJS.Timeout>();

  const fork = () => {
    const worker = cluster.fork();
    started.set(worker, { listening: false, at: Date.now() });
    // A process that is exiting can fail a message or a signal (EPIPE, ESRCH); its 'exit' says
    // what happened. Unhandled, that 'error' would bring down the primary with a stack trace.
    worker.on('error', (error: Error) => {
      logger.debug({ pid: worker.process.pid, err: error }, 'receiver process unreachable');
    });
  };
  cluster.on('listening', (worker) => {
    const state = started.get(worker);
    if (state) state.listening = true;
  });
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
    if (abnormal && (stopping || !listened)) exitCode = 1;
    // One that never listened would fail the same way again: a restart loop would hide why.
    if (!stopping && !listened) {
      logger.fatal(
        { pid: worker.process.pid, code, signal },
        'a receiver process failed at start-up; stopping the others',
      );
      stopAll();
    } else if (!stopping) {
      earlyDeaths = lived >= RESTART_BACKOFF.stableMs ? 0 : earlyDeaths + 1;
      // The first early death is replaced at once; from the second, the one backoff formula.
      const restartInMs =
        earlyDeaths <= 1
          ? 0
          : backoffDelay(earlyDeaths - 1, { ...RESTART_BACKOFF, jitter: 'none' });
      logger.error(
        { pid: worker.process.pid, code, signal, livedMs: lived, restartInMs },
        'receiver process died; replacing it',
      );
      const timer = setTimeout(() => {
        pendingForks.delete(timer);
        if (!stopping) fork();
      }, restartInMs);
      pendingForks.add(timer);
    }
    if (stopping && started.size === 0) process.exit(exitCode);
  });

  function stopAll() {
    stopping = true;
    for (const timer of pendingForks) clearTimeout(timer);
    pendingForks.clear();
    for (const worker of started.keys()) {
      if (worker.isConnected())
        worker.send(SHUTDOWN_MESSAGE, (error: Error | null) => {
          // Its channel closed on the way (it is exiting already): a signal still reaches it.
          if (error) worker.process.kill('SIGTERM');
        });
      else worker.kill('SIGTERM');
    }
    if (started.size === 0) process.exit(exitCode);
  }

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
}
