import type { QueueReads } from '../jobs/queue-union.js';
import type { Job } from 'bullmq';
import { jobItemId, type DeliveryJobData } from '../queue/delivery-job-data.js';
import { OperationalError } from './cli-errors.js';
import { FORWARD_QUEUE, retryAfresh, type ForwardQueue } from '../forwarding/forward-queue.js';
import { DELIVERY_QUEUE, waitListOf, waitLists } from '../queue/delivery-keys.js';
import { printRows, type Output, type Row } from './print.js';
import { counted } from '../util/counted.js';
import { createFailureLog, type LoggedFailure } from '../history/failure-log.js';
import { createRevocationRegistry, type RevokedKey } from '../history/revocation-registry.js';
import type { RedisConnection } from '../redis/connections.js';
import { jsonMember } from '../provider-spec/json-member.js';

function failedRow(job: Job<DeliveryJobData>) {
  return {
    id: job.id ?? null,
    event: job.name,
    data_id: jobItemId(job.data) ?? null,
    reason: job.failedReason,
    attempts: job.attemptsMade,
    failed_at: job.finishedOn === undefined ? null : new Date(job.finishedOn).toISOString(),
  };
}

/** `failed`: jobs kept after their last attempt, newest first, one per item. */
export async function listFailed(
  queue: QueueReads<DeliveryJobData>,
  json: boolean,
  output: Output,
): Promise<number> {
  const { latest } = await failedByItem(queue);
  printRows(output, latest.map(failedRow), ['id', 'event', 'data_id', 'reason', 'attempts'], json);
  return 0;
}

/**
 * The failed delivery jobs, newest first, split into the latest of each item (event and
 * data.id) and the earlier ones it supersedes: a replay of a failed item that fails again is a
 * second failed job for it, and `retry --all` ran both, so the item was handled twice and listed
 * twice. Both hold the same delivery; the latest is the one to show and to run again.
 */
async function failedByItem(
  queue: QueueReads<DeliveryJobData>,
): Promise<{ latest: Job<DeliveryJobData>[]; superseded: Job<DeliveryJobData>[] }> {
  const jobs = (await queue.getFailed(0, -1)).sort(
    (a, b) => (b.finishedOn ?? 0) - (a.finishedOn ?? 0),
  );
  const seen = new Set<string>();
  const latest: Job<DeliveryJobData>[] = [];
  const superseded: Job<DeliveryJobData>[] = [];
  for (const job of jobs) {
    const item = JSON.stringify([job.name, jobItemId(job.data)]);
    if (seen.has(item)) superseded.push(job);
    else {
      seen.add(item);
      latest.push(job);
    }
  }
  return { latest, superseded };
}

/** The columns of `failures`' table of forwards. */
const FORWARD_COLUMNS = ['id', 'destination', 'message_id', 'reason', 'attempts'];

/**
 * A recorded `audio.failed` as a row of `failures`, in the shape of a forward's row: `kind`,
 * `id` (here data.id, as `failures` has always shown it), `event`, `data_id` and `at` (when it
 * was received) in both, then what is its own: the log entry's fields (`received_at`, `payload`,
 * and `id_truncated`, `payload_bytes`, `payload_truncated` when the log entry cut them).
 */
function audioFailedRow({ id, ...record }: LoggedFailure): Row {
  return {
    kind: 'audio.failed',
    id,
    event: 'audio.failed',
    data_id: id,
    at: record.received_at,
    ...record,
  };
}

/**
 * A log entry (failed audio, revoked key) as a table shows it: an id cut ends in `…`, and a
 * payload too long to keep says so (the archive keeps the delivery whole).
 */
function recordCells(record: LoggedFailure | RevokedKey): Row {
  return {
    ...record,
    ...(record.id_truncated === true ? { id: `${record.id}…` } : {}),
    ...(record.payload === null && record.payload_bytes !== undefined
      ? { payload: `(${record.payload_bytes} bytes, not kept)` }
      : {}),
  };
}

/** `revoked-keys`: the revocation registry, newest first. */
export async function listRevokedKeys(
  redis: RedisConnection,
  prefix: string,
  json: boolean,
  output: Output,
): Promise<number> {
  const keys = await createRevocationRegistry(redis, prefix).listRevokedKeys();
  printRows(output, json ? keys : keys.map(recordCells), ['id', 'revoked_at', 'payload'], json);
  return 0;
}

/**
 * Forwards past FORWARD_ATTEMPTS, newest first, one row per destination that did not take the
 * message, in the shape of `failed`'s rows (`retry <id>` sends to those destinations again).
 */
async function failedForwards(queue: ForwardQueue): Promise<Row[]> {
  const jobs = await queue.getFailed(0, -1);
  return jobs.flatMap((job) =>
    job.data.destinations.map((destination) => ({
      kind: 'forward',
      id: job.id ?? null,
      event: job.name,
      data_id: itemId(job.data.body),
      at: job.finishedOn === undefined ? null : new Date(job.finishedOn).toISOString(),
      destination,
      message_id: job.data.messageId,
      reason: own(job.data.reasons, destination) ?? job.failedReason,
      attempts: own(job.data.attempted, destination) ?? job.attemptsMade,
      // As earlier versions named it, for scripts that read it.
      failed_at: job.finishedOn === undefined ? null : new Date(job.finishedOn).toISOString(),
    })),
  );
}

/** `failures`: the recorded `audio.failed` deliveries, then the forwards past their attempts. */
export async function listFailures(
  redis: RedisConnection,
  prefix: string,
  forwards: ForwardQueue,
  json: boolean,
  output: Output,
): Promise<number> {
  const failures = await createFailureLog(redis, prefix).list();
  const forwardRows = await failedForwards(forwards);
  if (json) {
    printRows(output, [...failures.map(audioFailedRow), ...forwardRows], [], true);
    return 0;
  }
  output.out('audio.failed deliveries recorded (the provider could not make the audio):\n');
  printRows(output, failures.map(recordCells), ['id', 'received_at', 'payload'], false);
  if (forwardRows.length > 0) {
    output.out(`\nforwards past FORWARD_ATTEMPTS (audio-webhooks retry <id> sends one again):\n`);
    printRows(output, forwardRows, FORWARD_COLUMNS, false);
  }
  return 0;
}

/**
 * `retry <jobId>` or `retry --all`: failed jobs go back to waiting with fresh attempts (their
 * count reset: BullMQ keeps it by default, and the retry policy would give up after the first
 * new failure), a delivery's (its handling runs again) or a forward's (its message sent again).
 */
export async function retryFailed(
  queues: readonly [QueueReads<DeliveryJobData>, ForwardQueue],
  jobId: string | undefined,
  output: Output,
): Promise<number> {
  const [deliveries, forwards] = queues;
  if (jobId === undefined) {
    const { latest, superseded } = await failedByItem(deliveries);
    // The earlier failed jobs of an item hold the delivery its latest one runs again.
    for (const job of superseded) await job.remove();
    for (const job of latest) await retryAfresh(job);
    const count = latest.length + (await retryAll(forwards));
    output.out(`${counted(count, 'failed job')} put back on the queue\n`);
    return 0;
  }
  const job = (await deliveries.getJob(jobId)) ?? (await forwards.getJob(jobId));
  if (job === undefined) throw new OperationalError(`no job ${jobId}`);
  if (!(await job.isFailed()))
    throw new OperationalError(`job ${jobId} is ${await job.getState()}, not failed`);
  await retryAfresh(job);
  output.out(`job ${jobId} put back on the queue\n`);
  return 0;
}

/**
 * `queue keys`: each wait list where a job waits for a worker, one row per shard of the deliveries
 * then the forwards' (KEDA's Redis triggers read their lengths: docs/operations.md).
 */
export function printQueueKeys(
  settings: { readonly queuePrefix: string; readonly queueShards: number },
  json: boolean,
  output: Output,
): number {
  const { queuePrefix: prefix, queueShards: shards } = settings;
  const rows = [
    ...waitLists(prefix, shards).map((key, shard) => ({ queue: DELIVERY_QUEUE, shard, key })),
    { queue: FORWARD_QUEUE, shard: null, key: waitListOf(prefix, FORWARD_QUEUE) },
  ];
  printRows(output, rows, ['queue', 'shard', 'key'], json);
  return 0;
}

/** Failed jobs read per round trip by `retry --all`: a page, not the whole failed set. */
const RETRY_PAGE = 100;

async function retryAll(queue: ForwardQueue): Promise<number> {
  let count = 0;
  for (;;) {
    // Each retried job leaves the failed set: the first page is always the next one.
    const page: Job[] = await queue.getFailed(0, RETRY_PAGE - 1);
    if (page.length === 0) return count;
    for (const job of page) await retryAfresh(job);
    count += page.length;
  }
}

/** A destination's entry of a per-destination map: a name like `constructor` is no inherited one's. */
function own<T>(map: Readonly<Record<string, T>> | undefined, name: string): T | undefined {
  return map !== undefined && Object.hasOwn(map, name) ? map[name] : undefined;
}

/** The item's data.id, from the message itself (the message id may be a hash of it). */
function itemId(body: string): string | null {
  const id = jsonMember(body, 'id');
  return id === undefined ? null : (JSON.parse(id) as string);
}
