import type { Job, JobType, Queue } from 'bullmq';

/** What readers ask of a queue that may be spread over shards. */
export type QueueReads<Data> = Pick<
  Queue<Data>,
  'getJobCounts' | 'getJobs' | 'getFailed' | 'getJob'
>;

/**
 * Several queues (a queue's shards) read as one: counts summed, jobs merged by the time they
 * were added (oldest first, or newest first when `asc` is false), a job looked for in each. A
 * range is taken from the merged list, so each shard is read from its start to the range's end.
 */
export function queueUnion<Data>(queues: readonly QueueReads<Data>[]): QueueReads<Data> {
  const [only] = queues;
  if (queues.length === 1 && only !== undefined) return only;
  const getJobs = async (
    types?: JobType | JobType[],
    start = 0,
    end = -1,
    asc = false,
  ): Promise<Job<Data>[]> => {
    const each = await Promise.all(queues.map((queue) => queue.getJobs(types, 0, end, asc)));
    const merged = each.flat().sort((a, b) => (asc ? 1 : -1) * (a.timestamp - b.timestamp));
    return merged.slice(start, end < 0 ? undefined : end + 1);
  };
  return {
    async getJobCounts(...types: JobType[]) {
      const each = await Promise.all(queues.map((queue) => queue.getJobCounts(...types)));
      const sum: Record<string, number> = {};
      for (const counts of each)
        for (const [state, n] of Object.entries(counts)) sum[state] = (sum[state] ?? 0) + n;
      return sum;
    },
    getJobs,
    getFailed: (start?: number, end?: number) => getJobs('failed', start, end, false),
    async getJob(id: string) {
      for (const queue of queues) {
        const job = await queue.getJob(id);
        if (job !== undefined) return job;
      }
      return undefined;
    },
  } as QueueReads<Data>;
}
