import type { RedisConnection } from '../redis/connections.js';
import { firstChars } from '../util/first-chars.js';
import { LISTED_DUPLICATES, MAX_STEPS, RECEIVED, STEP } from './timeline-scripts.js';

export { LISTED_DUPLICATES, MAX_STEPS };

/**
 * What happened to each delivery, for the delivery inspector: one timeline per `event` + `data.id`
 * pair, written by whichever process did the step (a receiver: received, duplicate; a worker:
 * attempts, handled, failed, stored; forwarding: per destination; `retry` and `replay`), read by
 * the inspector's API, page and CLI (inspector/).
 *
 * The timeline is ONE string key of positional JSON, which the scripts (timeline-scripts.ts) read
 * and rewrite atomically with Redis's cjson (a hash is stored as a hashtable, not a listpack,
 * once one value passes 64 bytes, and costs several times as much): what a handled delivery
 * leaves in the queue's Redis is at most 2 KB in all (docs/capacity.md), and its timeline is a
 * few hundred bytes of that. Details are stored terse (`0 245`: the index of the secret that verified it, from 0 as /metrics counts, and the size) and worded by
 * the reader (inspector/parse-timeline.ts). A delivery's job is not kept here: the dedupe mark
 * names it, and a replay's `replayed` step names the job it queued.
 *
 * Steps are kept oldest first, at most MAX_STEPS (the first, `received`, always, then the latest);
 * the provider's re-sends are counted in `d` and listed as steps only up to LISTED_DUPLICATES.
 * Each timeline lives the archive's retention (ARCHIVE_RETENTION_HOURS; the dedupe mark's when the
 * archive is off) from its last step. Two sorted sets under the same prefix index the timelines by
 * receipt time, newest last: every delivery, and the failed ones; members are the timelines'
 * digests, trimmed to the same retention as deliveries arrive.
 */

/** A step's detail is cut to this many characters. */
export const DETAIL_CHARS = 160;

/** Step codes as stored, and the names the API gives them. */
export const STEP_NAMES = {
  R: 'received',
  D: 'duplicate',
  A: 'attempt',
  X: 'attempt_failed',
  S: 'stored',
  H: 'handled',
  F: 'failed',
  T: 'retried',
  P: 'replayed',
  W: 'forwarded',
  Y: 'forward_failed',
  U: 'forward_held',
} as const;
export type StepCode = keyof typeof STEP_NAMES;

/** A delivery's state, stored as its first letter. */
export const STATES = { q: 'queued', a: 'active', h: 'handled', f: 'failed' } as const;
export type StateCode = keyof typeof STATES;

/** A destination's part, stored as its first letter and the attempts it made. */
export const FORWARD_STATES = {
  s: 'sent',
  p: 'pending',
  h: 'held',
  f: 'failed',
  x: 'filtered',
} as const;
export type ForwardCode = keyof typeof FORWARD_STATES;

/**
 * A timeline as stored: event, id, received (ms), state, attempts started, duplicates, each
 * destination and its "<state code><attempts>", the steps (ms after received, code, detail)…
 */
export type StoredTimeline = readonly [
  event: string,
  id: string,
  received: number,
  state: StateCode,
  attempts: number,
  duplicates: number,
  forwards: readonly (readonly [string, string])[] | Record<string, never>,
  steps: readonly (number | string)[] | Record<string, never>,
];

export interface TimelineKeys {
  readonly timeline: string;
  readonly all: string;
  readonly failed: string;
  /** The member of the indexes: 12 characters of the digest (72 bits; 1e-10 odds of a clash in 1M). */
  readonly member: string;
}

/**
 * Where a pair's timeline lives, as the queue hands it over (queue/delivery-keys.ts): the prefix
 * of the pair's queue, whose slot the timeline shares, and the pair's digest.
 */
export interface TimelinePlace {
  readonly prefix: string;
  readonly digest: string;
}

const MEMBER_CHARS = 12;

/** The member that stands for a pair in the indexes. */
export const memberOf = (digest: string) => digest.slice(0, MEMBER_CHARS);
export const timelineKeyOf = (prefix: string, member: string) => `${prefix}:i:${member}`;
export const indexKeys = (prefix: string) => ({
  all: `${prefix}:inspect:all`,
  failed: `${prefix}:inspect:failed`,
});

/** A pair's timeline, and the indexes it is listed in. */
export function timelineKeys({ prefix, digest }: TimelinePlace): TimelineKeys {
  const member = memberOf(digest);
  return { timeline: timelineKeyOf(prefix, member), ...indexKeys(prefix), member };
}

/**
 * How many characters of an id a timeline keeps (the provider's are far shorter; the timeline
 * of a longer one shows its start, and its page is still found by the whole id).
 */
const KEPT_ID_CHARS = 64;

const cut = (detail: string) =>
  detail.length <= DETAIL_CHARS ? detail : `${detail.slice(0, DETAIL_CHARS - 1)}…`;

/** A step's detail as stored: what was stored is kept whole (its name and digest are compared). */
const storedDetail = (code: string, detail: string) => (code === 'S' ? detail : cut(detail));

/** The delivery a step is about. */
export interface StepSubject {
  readonly event: string;
  readonly id: string;
  /** When it was received (ms since the epoch): used only when its timeline is gone. */
  readonly receivedAt: number;
}

/** A step noted earlier and written with a later one (worker/timeline-steps.ts): when, what. */
export interface EarlierStep {
  /** When it happened, ms since the epoch. */
  readonly at: number;
  readonly code: StepCode;
  readonly detail: string;
}

/** A step of a delivery's, and what it changes of its timeline. */
export interface Step {
  readonly code?: StepCode;
  readonly detail?: string;
  readonly state?: StateCode;
  /** The attempts started so far. */
  readonly attempts?: number;
  /** Into the failed index, or out of it. */
  readonly failedIndex?: '+' | '-';
  readonly destination?: {
    readonly name: string;
    readonly code: ForwardCode;
    readonly attempts: number;
  };
  readonly jobId?: string;
  /** Sets this job's data in the same call (the handled job's summary: run-delivery.ts). */
  readonly jobData?: {
    readonly key: string;
    readonly data: string;
    /** A field of the job to delete in the same call, '' none (queue/delivery-keys.ts). */
    readonly dropField: string;
  };
  /** Steps that happened before this one, appended first, oldest first, in the same call. */
  readonly earlier?: readonly EarlierStep[];
}

export interface DeliveryTimeline {
  /** Writes one step; rejects when Redis did (the caller decides whether that matters). */
  write(subject: StepSubject, step: Step): Promise<void>;
  /**
   * The receiver's step, queued on the enqueue's transaction after the dedupe mark (the mark
   * names `jobId` when the delivery is new). `detail`: which secret verified it, its size.
   */
  received(
    /** A MULTI, made from a connection the scripts were defined on (defineTimelineCommands). */
    transaction: object,
    /** The pair's place and dedupe mark (queue/delivery-keys.ts), computed once per delivery. */
    pair: TimelinePlace & { readonly mark: string },
    jobId: string,
    subject: Omit<StepSubject, 'receivedAt'>,
    detail: string,
  ): void;
  /** How long a timeline lives after its last step, in ms. */
  readonly ttlMs: number;
}

const STEP_COMMAND = 'inspectStep';
const RECEIVED_COMMAND = 'inspectReceived';
const defined = new WeakSet<object>();

/** What scripts are defined on: a connection (and the transactions made from it after). */
interface Scripted {
  defineCommand(name: string, definition: { numberOfKeys: number; lua: string }): void;
}

/** Defines the scripts as commands on a connection (and on the transactions made from it). */
function define(client: Scripted): void {
  if (defined.has(client)) return;
  client.defineCommand(STEP_COMMAND, { numberOfKeys: 4, lua: STEP });
  client.defineCommand(RECEIVED_COMMAND, { numberOfKeys: 4, lua: RECEIVED });
  defined.add(client);
}

/** Defines the receiver's script on the queue's client, before it makes transactions. */
export function defineTimelineCommands(client: Scripted): void {
  define(client);
}

/** A script defined on a connection or transaction, as ioredis adds it: a method of that name. */
function commandOf(
  client: object,
  name: string,
): (...args: (string | number)[]) => Promise<unknown> {
  const command = (client as Record<string, unknown>)[name];
  if (typeof command !== 'function') throw new Error(`the script ${name} is not defined here`);
  return (command as (...args: (string | number)[]) => Promise<unknown>).bind(client);
}

/**
 * A delivery's timeline in Redis, each pair's where `placeOf` puts it (the queue's keys: a
 * timeline shares its queue's slot). `ttlMs`: ARCHIVE_RETENTION_HOURS, or DEDUPE_TTL_SECONDS when
 * the archive is off (timelineTtlMs).
 */
export function deliveryTimeline(
  redis: RedisConnection,
  placeOf: (event: string, id: string) => TimelinePlace,
  ttlMs: number,
): DeliveryTimeline {
  return {
    ttlMs,
    async write(subject, step) {
      define(redis);
      const keys = timelineKeys(placeOf(subject.event, subject.id));
      const destination = step.destination;
      await commandOf(redis, STEP_COMMAND)(
        keys.timeline,
        keys.all,
        keys.failed,
        // No job to write: a key of the timeline's own slot stands in (the script reads KEYS[4]
        // only with data to write), since on a Cluster every key of a script must share a slot.
        step.jobData?.key ?? keys.timeline,
        Date.now(),
        step.code ?? '',
        storedDetail(step.code ?? '', step.detail ?? ''),
        step.failedIndex ?? '',
        ttlMs,
        keys.member,
        subject.event,
        firstChars(subject.id, KEPT_ID_CHARS),
        subject.receivedAt,
        step.state ?? '',
        step.attempts ?? '',
        destination?.name ?? '',
        destination === undefined ? '' : `${destination.code}${destination.attempts}`,
        step.jobData?.data ?? '',
        step.jobData?.dropField ?? '',
        ...(step.earlier ?? []).flatMap((e) => [e.at, e.code, storedDetail(e.code, e.detail)]),
      );
    },
    received(transaction, pair, jobId, subject, detail) {
      const keys = timelineKeys(pair);
      void commandOf(transaction, RECEIVED_COMMAND)(
        pair.mark,
        keys.timeline,
        keys.all,
        keys.failed,
        jobId,
        Date.now(),
        subject.event,
        firstChars(subject.id, KEPT_ID_CHARS),
        cut(detail),
        ttlMs,
        keys.member,
      );
    },
  };
}

/** How long timelines live: the archive's retention, else the dedupe mark's lifetime. */
export function timelineTtlMs(settings: {
  readonly archiveRetentionHours: number;
  readonly dedupeTtlSeconds: number;
}): number {
  return settings.archiveRetentionHours > 0
    ? settings.archiveRetentionHours * 3600 * 1000
    : settings.dedupeTtlSeconds * 1000;
}
