import { Worker, type Job, type Telemetry } from 'bullmq';
import type { Logger } from 'pino';
import type { RedisConnection } from '../redis/connections.js';
import type { HoldReason } from '../redis/redis-memory.js';
import type { WriteGate } from '../redis/write-gate.js';
import { backoffStrategy, type RetryPolicy } from './retry-policy.js';

/**
 * How long finished jobs are kept, by queue: set on the worker rather than on each job, so the
 * receiver's hot path does not carry it. Completed deliveries are kept a day (for the
 * dashboard; a summary, not the payload, once over 512 bytes), failed ones for inspection and
 * `retry`; failed forwards for `failures`. A forward job asks to be removed once sent
 * (forward-at-once.ts), so the `completed` rule of forwards applies only to jobs queued by an
 * earlier version.
 */
export const KEEP = {
  deliveries: { completed: { age: 24 * 3600, count: 10_000 }, failed: { count: 50_000 } },
  forwards: { completed: { age: 3600, count: 10_000 }, failed: { count: 10_000 } },
} as const;

/** How one run of a job ended: `failed` is for good (no attempt left, or unrecoverable). */
export type RunOutcome = 'completed' | 'retrying' | 'failed';

export interface JobWorkerOptions<Data> {
  readonly queue: keyof typeof KEEP;
  readonly connection: RedisConnection;
  readonly prefix: string;
  readonly concurrency: number;
  readonly policy: RetryPolicy;
  readonly logger: Logger;
  /** Reports the worker's errors (a connection error once, by state: watch-redis.ts). */
  readonly reportError: (error: unknown, msg: string) => void;
  /**
   * While it holds writes back (Redis refuses them: write-gate.ts), the worker takes no job:
   * BullMQ retries a refused fetch at once, without end. @defaultValue none
   */
  readonly gate?: Pick<WriteGate, 'onChange'> | undefined;
  /**
   * Whether the worker stops for this reason of the gate's. @defaultValue every reason
   */
  readonly holdsFor?: ((reason: HoldReason) => boolean) | undefined;
  /** What a "failed" line says of the job, besides its id, name and attempts. */
  readonly describe: (job: Job<Data>) => Record<string, unknown>;
  /** What its log lines call a job: `job`, `forward`. */
  readonly label: string;
  /** What to do about a job that failed for good, for the line that says so. */
  readonly whenFailed: string;
  /**
   * WORKER_LOCK_MS: how long a run holds its job without renewing the lock; a job whose worker
   * died is taken over (its stall noticed) after about this long.
   */
  readonly lockMs: number;
  /** bullmq-otel, when tracing is on. @defaultValue none */
  readonly telemetry?: Telemetry | undefined;
  /**
   * Told of every run this worker ends, with its outcome and its seconds (the processor's
   * time and BullMQ's move of the job); not of a run cut off by a crash. @defaultValue none
   */
  readonly onRun?: ((job: Job<Data>, outcome: RunOutcome, seconds: number) => void) | undefined;
}

/**
 * THE way this service runs a BullMQ worker, for deliveries and forwards alike: the retry
 * policy as its backoff strategy, the queue's retention, one log line per failed attempt
 * (`warn` while it will be retried, `error` once it failed for good), and each run's outcome
 * and time for whoever measures them (`onRun`).
 */
export function startJobWorker<Data>(
  /** Runs one job; `token` is the run's lock, for a processor that moves its job itself. */
  processor: (job: Job<Data>, token: string | undefined) => Promise<unknown>,
  options: JobWorkerOptions<Data>,
): Worker<Data> {
  // When each run started, by job: BullMQ's 'completed' and 'failed' carry the job object the
  // processor was given. Two parameters: BullMQ tracks an AbortSignal per job for a processor
  // that declares a third.
  const started = new WeakMap<Job<Data>, number>();
  const ran = (job: Job<Data>, outcome: RunOutcome) => {
    const start = started.get(job);
    if (start !== undefined) options.onRun?.(job, outcome, (performance.now() - start) / 1000);
  };
  const timed = (job: Job<Data>, token?: string) => {
    started.set(job, performance.now());
    return processor(job, token);
  };
  const worker = new Worker<Data>(options.queue, timed, {
    // Shared with the timelines and logs (history/); BullMQ duplicates it for its blocking reads.
    connection: options.connection,
    prefix: options.prefix,
    ...(options.telemetry === undefined ? {} : { telemetry: options.telemetry }),
    concurrency: options.concurrency,
    lockDuration: options.lockMs,
    stalledInterval: options.lockMs,
    // Stalls (the worker killed, Redis gone past the lock) have a budget of their own, as large
    // as the job's attempts: BullMQ fails a job at its stall number `attempts + 1`. Its default
    // (1) failed a forward after two stalls that faults beside it caused (docs/reliability.md);
    // a job that kills every worker that runs it still fails, after `attempts + 1` of them.
    maxStalledCount: options.policy.attempts,
    removeOnComplete: KEEP[options.queue].completed,
    removeOnFail: KEEP[options.queue].failed,
    settings: { backoffStrategy: backoffStrategy(options.policy) },
  });
  worker.on('failed', (job, error) => {
    // BullMQ sets finishedOn when the job moved to failed for good (a retry resets it to null).
    const final = job === undefined || Boolean(job.finishedOn);
    if (job !== undefined) ran(job, final ? 'failed' : 'retrying');
    options.logger[final ? 'error' : 'warn'](
      {
        jobId: job?.id,
        event: job?.name,
        ...(job === undefined ? {} : options.describe(job)),
        attemptsMade: job?.attemptsMade,
        reason: error.message,
      },
      `${options.label} failed; ${final ? options.whenFailed : 'will retry'}`,
    );
  });
  worker.on('completed', (job) => {
    ran(job, 'completed');
  });
  worker.on('error', (error) => {
    options.reportError(error, `${options.queue} worker error`);
  });
  const holdsFor = options.holdsFor ?? (() => true);
  const stopListening = options.gate?.onChange((reason) => {
    // Active jobs go on (their end is a write the gate's probe waits for too).
    void (reason !== undefined && holdsFor(reason) ? worker.pause(true) : worker.resume());
  });
  worker.on('closing', () => stopListening?.());
  return worker;
}
