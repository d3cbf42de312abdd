import type { Job } from 'bullmq';
import type { RedisConnection } from '../redis/connections.js';
import {
  indexKeys,
  timelineKeyOf,
  timelineKeys,
  type TimelinePlace,
} from '../history/delivery-timeline.js';
import type { DeliveryJobData } from '../queue/delivery-job-data.js';
import { parseTimeline, type DeliveryState, type ReadTimeline } from './parse-timeline.js';

export type {
  DeliveryState,
  DeliverySummary,
  ForwardPart,
  ForwardState,
  ReadTimeline,
  TimelineStep,
} from './parse-timeline.js';

const BULLMQ_STATES: Readonly<Record<string, DeliveryState>> = {
  waiting: 'queued',
  delayed: 'queued',
  prioritized: 'queued',
  'waiting-children': 'queued',
  active: 'active',
  completed: 'handled',
  failed: 'failed',
};

/** The state a job's BullMQ state means, when the job still exists. */
export function stateOfJob(state: string): DeliveryState | undefined {
  return Object.hasOwn(BULLMQ_STATES, state) ? BULLMQ_STATES[state] : undefined;
}

/** The timeline of one `event` + `data.id` pair, or undefined when none is kept. */
export async function readTimeline(
  redis: RedisConnection,
  place: TimelinePlace,
): Promise<ReadTimeline | undefined> {
  const keys = timelineKeys(place);
  return parseTimeline(await redis.get(keys.timeline), keys.member);
}

/** What a list asks for: every field narrows it; none, the newest deliveries of all. */
export interface ListQuery {
  /** At most this many (1 to 200). */
  readonly limit: number;
  /** Where the page before ended (its `next_cursor`, read by decodeCursor). */
  readonly cursor?: Cursor | undefined;
  /** Only this event's. */
  readonly event?: string | undefined;
  /** Only those in this state (`failed` reads the failed index alone). */
  readonly state?: DeliveryState | undefined;
  /** Only those whose message went, or goes, to this destination. */
  readonly destination?: string | undefined;
  /** Received at or after (ms). */
  readonly since?: number | undefined;
  /** Received at or before (ms). */
  readonly until?: number | undefined;
}

/** Index entries read per round trip while filtering. */
const PAGE = 200;
/**
 * Index entries one list request reads at the most: a filter that matches little answers with
 * fewer than `limit` and a cursor to go on from, rather than reading the whole retention.
 */
export const SCAN_BUDGET = 5_000;

/** Where a list stopped: the last index entry it read, by score and member. */
export interface Cursor {
  readonly score: number;
  readonly member: string;
}

/** The cursor is opaque to clients: where the list stopped, as score and member. */
export function encodeCursor(score: number, member: string): string {
  return Buffer.from(JSON.stringify([score, member])).toString('base64url');
}

/** A cursor encodeCursor gave; undefined for any other text. */
export function decodeCursor(cursor: string): Cursor | undefined {
  try {
    const value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (!Array.isArray(value) || typeof value[0] !== 'number' || typeof value[1] !== 'string')
      return undefined;
    return { score: value[0], member: value[1] };
  } catch {
    return undefined;
  }
}

/** One index entry and the timeline it names (null when the timeline is gone). */
interface Indexed {
  readonly score: number;
  readonly member: string;
  readonly raw: string | null;
}

/**
 * One shard's index entries newest first, a page per round trip with the timelines they name (an
 * index and its timelines share the shard's slot, so one MGET reads them). Equal times list in
 * reverse order of member; those at or after the cursor's are left out.
 */
async function* shardEntries(
  redis: RedisConnection,
  prefix: string,
  query: ListQuery,
): AsyncGenerator<Indexed, undefined> {
  const keys = indexKeys(prefix);
  const index = query.state === 'failed' ? keys.failed : keys.all;
  const after = query.cursor;
  const max = String(after?.score ?? query.until ?? '+inf');
  const min = String(query.since ?? '-inf');
  for (let offset = 0; offset < SCAN_BUDGET; offset += PAGE) {
    const page = await redis.zrange(
      index,
      max,
      min,
      'BYSCORE',
      'REV',
      'LIMIT',
      offset,
      PAGE,
      'WITHSCORES',
    );
    const entries: { member: string; score: number }[] = [];
    for (let i = 0; i + 1 < page.length; i += 2) {
      const member = page[i] ?? '';
      const score = Number(page[i + 1]);
      if (after !== undefined && score === after.score && member >= after.member) continue;
      entries.push({ member, score });
    }
    const raws =
      entries.length === 0
        ? []
        : await redis.mget(entries.map((e) => timelineKeyOf(prefix, e.member)));
    for (const [at, entry] of entries.entries()) yield { ...entry, raw: raws[at] ?? null };
    if (page.length < PAGE * 2) return;
  }
}

/** Whether `a` lists before `b`: newer first, then by member in reverse, as one index lists. */
const before = (a: Indexed, b: Indexed) =>
  a.score !== b.score ? a.score > b.score : a.member > b.member;

/**
 * Timelines newest first from the time index (the failed one for `state: failed`) of every shard
 * (`prefixes`, each shard's), merged as one index, filtered, `limit` at the most, and the cursor
 * to the next page (null when no index has more). A pair lives in one shard, so a member is in
 * one index, and one cursor (score and member) says where the merged list stopped in each.
 */
export async function listTimelines(
  redis: RedisConnection,
  prefixes: readonly string[],
  query: ListQuery,
): Promise<{ timelines: ReadTimeline[]; next: string | null }> {
  const shards = prefixes.map((prefix) => shardEntries(redis, prefix, query));
  const heads = await Promise.all(shards.map(async (shard) => (await shard.next()).value));
  const timelines: ReadTimeline[] = [];
  let last: Indexed | undefined;
  try {
    for (let read = 0; read < SCAN_BUDGET; read++) {
      let at = -1;
      heads.forEach((head, i) => {
        const newest = heads[at];
        if (head !== undefined && (newest === undefined || before(head, newest))) at = i;
      });
      const entry = heads[at];
      const shard = shards[at];
      if (entry === undefined || shard === undefined) return { timelines, next: null };
      last = entry;
      heads[at] = (await shard.next()).value;
      const timeline = parseTimeline(entry.raw, entry.member);
      if (timeline === undefined || !matches(timeline, query)) continue;
      timelines.push(timeline);
      if (timelines.length === query.limit)
        return { timelines, next: encodeCursor(entry.score, entry.member) };
    }
    return { timelines, next: last === undefined ? null : encodeCursor(last.score, last.member) };
  } finally {
    await Promise.all(shards.map((shard) => shard.return(undefined)));
  }
}

/** Whether a timeline is one the query asks for: every field given narrows it. */
export function matches(timeline: ReadTimeline, query: ListQuery): boolean {
  const { summary } = timeline;
  if (query.event !== undefined && summary.event !== query.event) return false;
  if (query.state !== undefined && summary.state !== query.state) return false;
  // Own names only: `in` would find `constructor` or `toString` in every timeline.
  if (query.destination !== undefined && !Object.hasOwn(summary.forwards, query.destination))
    return false;
  if (query.since !== undefined && timeline.score < query.since) return false;
  if (query.until !== undefined && timeline.score > query.until) return false;
  return true;
}

/** The delivery a job holds, parsed, when it still holds its body. */
export function payloadOfJob(job: Job<DeliveryJobData> | undefined): unknown {
  if (job?.data.body === undefined) return undefined;
  try {
    return JSON.parse(job.data.body) as unknown;
  } catch {
    return undefined;
  }
}
