import type { Job } from 'bullmq';
import { KEEP } from '../jobs/start-job-worker.js';
import type { DeliveryJobData } from '../queue/delivery-job-data.js';
import { queueOf, type DeliveryQueue } from '../queue/delivery-queue.js';
import { pairDigest } from '../queue/delivery-keys.js';
import { memberOf } from '../history/delivery-timeline.js';
import type { RedisConnection } from '../redis/connections.js';
import {
  readTimeline,
  stateOfJob,
  type DeliveryState,
  type ReadTimeline,
  type TimelineStep,
} from './timeline-queries.js';

/** Where one delivery is looked for. */
export interface DeliverySources {
  readonly redis: RedisConnection;
  /** Each shard's queue, by index (createDeliveryQueues): a pair's job is in its shard's. */
  readonly queues: readonly DeliveryQueue[];
  /** DEDUPE_TTL_SECONDS: a mark's age is this less the time it has left. */
  readonly dedupeTtlSeconds: number;
}

/** A delivery found: its timeline (or one built from what else is kept) and its job. */
export interface FoundDelivery {
  /** Its state is its job's while the job lasts: the worker's steps may lag behind it. */
  readonly timeline: ReadTimeline;
  readonly jobId: string | undefined;
  readonly job: Job<DeliveryJobData> | undefined;
  /** The queue of its shard, where its job is and where a retry or replay of it goes. */
  readonly queue: DeliveryQueue;
}

const hours = (seconds: number) => `${seconds / 3600} h`;

/**
 * One delivery of an `event` + `data.id` pair, by every reader of the inspector (the API's detail
 * and search by id, the page, the CLI), from whatever is kept of it (docs/operations.md, "How
 * long"): its timeline; else its job, which outlives the timeline when the
 * delivery was accepted before timelines were kept or its timeline expired; else its dedupe mark
 * alone, which names the job and tells when it was set. Undefined when none of them is kept.
 */
export async function findDelivery(
  sources: DeliverySources,
  event: string,
  id: string,
): Promise<FoundDelivery | undefined> {
  const { redis } = sources;
  const queue = queueOf(sources.queues, event, id);
  const pair = queue.layout.pairOf(event, id);
  const [read, mark] = await Promise.all([readTimeline(redis, pair), redis.get(pair.mark)]);
  // A replay's step names the job it queued; else the pair's dedupe mark names its first.
  const jobId = read?.jobId ?? mark ?? undefined;
  const kept = jobId === undefined ? undefined : await queue.getJob(jobId);
  const state = kept === undefined ? undefined : stateOfJob(await kept.getState());
  const job = state === undefined ? undefined : kept;
  // The worker writes `handled` before its job completes: a job found completed after the
  // timeline was read means the timeline read was older than that step, so it is read again
  // (a failure goes the other way, the job failed before its step: its state stands in).
  const timeline =
    state === 'handled' && read !== undefined && read.summary.state !== 'handled'
      ? ((await readTimeline(redis, pair)) ?? read)
      : read;
  if (timeline !== undefined) {
    const summary = { ...timeline.summary, state: state ?? timeline.summary.state };
    return { timeline: { ...timeline, summary }, jobId, job, queue };
  }
  if (job !== undefined && state !== undefined)
    return { timeline: fromJob(event, id, job, state), jobId, job, queue };
  if (mark === null) return undefined;
  const left = await redis.pttl(pair.mark);
  const age = left > 0 ? Math.max(0, sources.dedupeTtlSeconds * 1000 - left) : 0;
  return {
    timeline: fromMark(event, id, mark, Date.now() - age),
    jobId,
    job: undefined,
    queue,
  };
}

/** Every delivery of a `data.id`, one per event it came with, newest first. */
export async function findById(
  sources: DeliverySources,
  id: string,
  events: readonly string[],
): Promise<FoundDelivery[]> {
  const found = await Promise.all(events.map((event) => findDelivery(sources, event, id)));
  return found
    .filter((delivery): delivery is FoundDelivery => delivery !== undefined)
    .sort((a, b) => b.timeline.score - a.timeline.score);
}

/** A timeline with no steps but those given, no re-sends and no forwards known. */
function bare(
  event: string,
  id: string,
  receivedMs: number,
  state: DeliveryState,
  attempts: number,
  steps: readonly TimelineStep[],
): ReadTimeline {
  return {
    summary: {
      event,
      id,
      received_at: new Date(receivedMs).toISOString(),
      state,
      attempts,
      duplicates: 0,
      forwards: {},
    },
    jobId: undefined,
    steps,
    forwards: [],
    stored: null,
    traceId: null,
    score: receivedMs,
    member: memberOf(pairDigest(event, id)),
  };
}

/** What a job says of its delivery: when it came, its attempts, how its last one ended. */
function fromJob(
  event: string,
  id: string,
  job: Job<DeliveryJobData>,
  state: DeliveryState,
): ReadTimeline {
  const receivedMs = Date.parse(job.data.receivedAt) || job.timestamp;
  const at = (ms: number | undefined) => new Date(ms ?? receivedMs).toISOString();
  const attempts = Math.max(job.attemptsStarted, job.attemptsMade);
  const timeline: TimelineStep[] = [
    {
      at: at(receivedMs),
      step: 'received',
      detail: `its timeline is no longer kept: these steps are what job ${job.id ?? ''} tells`,
    },
  ];
  // Typed as always there, it is absent until an attempt fails.
  const reason = job.failedReason as string | undefined;
  if (state === 'failed')
    timeline.push({ at: at(job.finishedOn), step: 'failed', detail: reason ?? '' });
  else if (state === 'handled')
    timeline.push({ at: at(job.finishedOn), step: 'handled', detail: '' });
  else if (reason !== undefined && reason !== '')
    // Its last attempt failed and it waits for the next (or runs it).
    timeline.push({ at: at(job.processedOn), step: 'attempt_failed', detail: reason });
  if (state === 'active')
    timeline.push({ at: at(job.processedOn), step: 'attempt', detail: `attempt ${attempts}` });
  const traceId = job.data.traceparent?.slice(3, 35);
  const built = bare(event, id, receivedMs, state, attempts, timeline);
  return traceId === undefined ? built : { ...built, traceId };
}

/**
 * What a dedupe mark alone says: the delivery was accepted, when (its time left), and as which
 * job. That job is gone, and BullMQ removes a job unasked only once it completed (after
 * KEEP's age) or is past the newest failed ones KEEP holds: handled, unless an operator removed
 * it or failures ran past that count, and the step says it is inferred.
 */
function fromMark(event: string, id: string, jobId: string, receivedMs: number): ReadTimeline {
  const keep = KEEP.deliveries;
  const detail = `its timeline and job ${jobId} are no longer kept, only its dedupe mark: taken as handled, since a handled job is removed after ${hours(keep.completed.age)} and a failed one is kept (the newest ${keep.failed.count})`;
  const timeline: TimelineStep[] = [
    { at: new Date(receivedMs).toISOString(), step: 'received', detail },
  ];
  return bare(event, id, receivedMs, 'handled', 0, timeline);
}
