import type { Job } from 'bullmq';
import type { DeliveryJobData, DeliveryQueue } from '../queue/delivery-queue.js';
import { OperationalError } from './cli-errors.js';
import { printRows, type Output } from './print.js';
import { counted } from '../util/counted.js';

function failedRow(job: Job<DeliveryJobData>) {
  return {
    id: job.id ?? null,
    event: job.name,
    data_id: job.data.event.data.id,
    reason: job.failedReason,
    attempts: job.attemptsMade,
    failed_at: job.finishedOn === undefined ? null : new Date(job.finishedOn).toISOString(),
  };
}

/** `failed`: jobs kept after their last attempt, newest first. */
export async function listFailed(
  queue: DeliveryQueue,
  json: boolean,
  output: Output,
): Promise<number> {
  const jobs = await queue.getFailed(0, -1);
  printRows(output, jobs.map(failedRow), ['id', 'event', 'data_id', 'reason', 'attempts'], json);
  return 0;
}

/** `retry <jobId>` or `retry --all`: failed jobs go back to waiting with fresh attempts. */
export async function retryFailed(
  queue: DeliveryQueue,
  jobId: string | undefined,
  output: Output,
): Promise<number> {
  if (jobId === undefined) {
    const count = await queue.getJobCountByTypes('failed');
    await queue.retryJobs({ state: 'failed', count: 1000 });
    output.out(`${counted(count, 'failed job')} put back on the queue\n`);
    return 0;
  }
  const job = await queue.getJob(jobId);
  if (job === undefined) throw new OperationalError(`no job ${jobId}`);
  if (!(await job.isFailed()))
    throw new OperationalError(`job ${jobId} is ${await job.getState()}, not failed`);
  await job.retry('failed');
  output.out(`job ${jobId} put back on the queue\n`);
  return 0;
}
