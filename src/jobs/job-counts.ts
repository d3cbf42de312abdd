import type { JobType, Queue } from 'bullmq';
import type { RedisConnection } from '../redis/connections.js';
import { withDeadline } from '../util/deadline.js';

/**
 * How long a read of the queue's counts may take (a scrape, a liveness probe). Prometheus's own
 * scrape timeout is 10 s by default; an answer with the last values beats one that times out.
 */
export const JOB_COUNTS_DEADLINE_MS = 2_000;

/** The queue's counts by state; rejects when Redis cannot say, at once or by the deadline. */
export type JobCounts = (...states: JobType[]) => Promise<Record<string, number>>;

/**
 * Counts that never hang: while the connection is down they fail at once (BullMQ would wait for
 * it, for good when it was down at start), and a Redis that accepts but does
 * not answer is cut off after JOB_COUNTS_DEADLINE_MS.
 */
export function boundedJobCounts(
  queue: Pick<Queue, 'getJobCounts'>,
  redis: RedisConnection,
): JobCounts {
  return (...states) =>
    redis.status === 'ready'
      ? withDeadline(queue.getJobCounts(...states), JOB_COUNTS_DEADLINE_MS, 'the queue counts')
      : Promise.reject(new Error(`Redis is ${redis.status}`));
}
