import { Queue, type Job } from 'bullmq';
import type { RedisConnection } from '../redis/connections.js';
import { withDeadline } from '../util/deadline.js';
import { queueUnion } from './queue-union.js';
import { boundedJobCounts, JOB_COUNTS_DEADLINE_MS, type JobCounts } from './job-counts.js';

/** The age in seconds of a queue's oldest job ready to run; 0 when none. */
export type OldestWaiting = () => Promise<number>;

/** Per name, the age in seconds of the oldest job still pending for it. */
export type OldestPending = () => Promise<ReadonlyMap<string, number>>;

const ageOf = (since: number) => Math.max(0, (Date.now() - since) / 1000);

/**
 * Reads that fail at once while the connection is down and never outlast
 * JOB_COUNTS_DEADLINE_MS (job-counts.ts says why), like the queue's counts.
 */
function bounded<T>(redis: RedisConnection, read: () => Promise<T>, what: string): Promise<T> {
  return redis.status === 'ready'
    ? withDeadline(read(), JOB_COUNTS_DEADLINE_MS, what)
    : Promise.reject(new Error(`Redis is ${redis.status}`));
}

/**
 * The age of the job that runs next, from one range read and its job: the tail of the wait
 * list, and the first prioritized job (replays, which all share one priority, so their first is
 * their oldest). Delayed jobs are left out: they wait for their backoff, not for a worker. A job
 * run before (a retry, a job whose worker died) has waited since its last run started, not
 * since it was added: BullMQ keeps no time of its return to the wait list.
 */
export function boundedOldestWaiting(
  queue: Pick<Queue, 'getJobs'>,
  redis: RedisConnection,
): OldestWaiting {
  return async () => {
    const next = await bounded(
      redis,
      () => queue.getJobs(['wait', 'prioritized'], 0, 0, true),
      'the oldest waiting job',
    );
    const since = next.map((job) => Math.max(job.timestamp, job.processedOn ?? 0));
    return since.length === 0 ? 0 : ageOf(Math.min(...since));
  };
}

/**
 * Bounded work per scrape: the oldest `perState` waiting jobs and the `perState` delayed ones
 * due first (at most 2 × perState jobs, their data with them), each counted for every name
 * `namesOf` gives, from the time it was added. A name pending only in jobs past that window
 * shows 0 there.
 */
export function boundedOldestPending<Data>(
  queue: Pick<Queue<Data>, 'getJobs'>,
  redis: RedisConnection,
  namesOf: (job: Job<Data>) => readonly string[],
  perState: number,
): OldestPending {
  return async () => {
    const jobs = await bounded(
      redis,
      () => queue.getJobs(['wait', 'delayed'], 0, perState - 1, true),
      'the oldest pending jobs',
    );
    const oldest = new Map<string, number>();
    for (const job of jobs)
      for (const name of namesOf(job))
        oldest.set(name, Math.min(oldest.get(name) ?? Infinity, job.timestamp));
    return new Map([...oldest].map(([name, since]) => [name, ageOf(since)]));
  };
}

/** The bounded counts and oldest waiting age of queues read as one (a queue's shards). */
export function boundedQueueReads(
  queues: readonly Pick<Queue, 'getJobCounts' | 'getJobs' | 'getFailed' | 'getJob'>[],
  redis: RedisConnection,
): { readonly jobCounts: JobCounts; readonly oldestWaiting: OldestWaiting } {
  const all = queueUnion(queues);
  return {
    jobCounts: boundedJobCounts(all, redis),
    oldestWaiting: boundedOldestWaiting(all, redis),
  };
}

/** What a process that works a queue reads of it for liveness and /metrics, bounded. */
export interface QueueReaders {
  readonly counts: JobCounts;
  readonly oldestWaiting: OldestWaiting;
  close(): Promise<void>;
}

/**
 * The bounded reads of the queue `name`, on Queues of their own that share `redis` (a worker
 * process's liveness and /metrics ask these): one per prefix, read as one (a queue's shards).
 */
export function queueReaders(
  name: string,
  redis: RedisConnection,
  prefixes: string | readonly string[],
  reportError: (error: unknown, msg: string) => void,
): QueueReaders {
  const queues = [prefixes].flat().map((prefix) => new Queue(name, { connection: redis, prefix }));
  for (const queue of queues)
    queue.on('error', (error: unknown) => {
      reportError(error, `${name} queue error`);
    });
  const { jobCounts, oldestWaiting } = boundedQueueReads(queues, redis);
  return {
    counts: jobCounts,
    oldestWaiting,
    close: async () => {
      await Promise.all(queues.map((queue) => queue.close()));
    },
  };
}
