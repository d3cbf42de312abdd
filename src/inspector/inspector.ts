import type { Archive, ArchivedDelivery } from '../archive/archive.js';
import { replayDeliveries } from '../archive/replay.js';
import { destinationControl, type DestinationStatus } from '../forwarding/destination-control.js';
import { knownDestinations, type RosterEntry } from '../forwarding/destination-roster.js';
import { retryAfresh } from '../forwarding/forward-queue.js';
import type { ForwardSettings } from '../forwarding/settings/forward-settings.js';
import type { DestinationSettings } from '../forwarding/settings/resolve-destinations.js';
import { queueOf, type DeliveryQueue } from '../queue/delivery-queue.js';
import { DELIVERY_QUEUE } from '../queue/delivery-keys.js';
import type { DeliveryTimeline } from '../history/delivery-timeline.js';
import type { RedisConnection } from '../redis/connections.js';
import type { AudioStore } from '../storage/audio-store.js';
import { withDeadline } from '../util/deadline.js';
import {
  listTimelines,
  matches,
  payloadOfJob,
  type DeliverySummary,
  type ForwardPart,
  type ListQuery,
  type TimelineStep,
} from './timeline-queries.js';
import { findById, findDelivery } from './find-delivery.js';
import type { NoticeCode } from './notices.js';

/**
 * One delivery whole, as `GET /admin/api/deliveries/<event>/<id>` answers (docs/operations.md,
 * "Every route of the inspector"): the summary's fields, its forwards as a list.
 */
export interface DeliveryDetail extends Omit<DeliverySummary, 'forwards'> {
  readonly payload: unknown;
  readonly stored: unknown;
  /** Its W3C trace id, which its forwards' `traceparent` carries; null when not kept. */
  readonly trace_id: string | null;
  readonly timeline: readonly TimelineStep[];
  readonly forwards: readonly ForwardPart[];
}

/** The API's object, and what the page shows besides. */
export interface DetailView {
  readonly api: DeliveryDetail;
  /** Its current job, and why it failed last. */
  readonly jobId: string | undefined;
  /** The queue dashboard's name of its shard's queue (boardQueueName). @defaultValue deliveries */
  readonly boardQueue?: string;
  readonly failedReason: string | undefined;
  /** Each of its destinations' shared state (paused or not). */
  readonly destinations: readonly DestinationStatus[];
}

export interface InspectorDeps {
  readonly redis: RedisConnection;
  /** QUEUE_PREFIX: where forwarding's shared state is. */
  readonly prefix: string;
  /** Each shard's deliveries queue, by index (createDeliveryQueues): all read as one. */
  readonly queues: readonly [DeliveryQueue, ...DeliveryQueue[]];
  readonly timeline: DeliveryTimeline;
  /** DEDUPE_TTL_SECONDS: when a delivery known by its dedupe mark alone was accepted. */
  readonly dedupeTtlSeconds: number;
  /** The events a `data.id` alone is looked for under: built-in, then the fork's. */
  readonly events: readonly string[];
  /** The archive, for payloads and replays; undefined when there is none to read. */
  readonly archive: () => Promise<Archive | undefined>;
  /**
   * The audio store, for the stored audio (open-stores.ts).
   * @defaultValue none: the audio is not served
   */
  readonly store?: (() => Promise<AudioStore | undefined>) | undefined;
  /** What forwarding's pause and resume read (the same as `forward pause`). */
  readonly forwarding: DestinationSettings &
    Pick<ForwardSettings, 'forwardPauseAfter' | 'forwardProbeSeconds'>;
}

/**
 * The answer to an action: done, refused because of the delivery's state, or nothing found;
 * `message` is the API's detail, `notice` what the page's status box says (notices.ts).
 */
export interface ActionResult {
  readonly kind: 'done' | 'conflict' | 'unknown';
  readonly message: string;
  readonly notice: NoticeCode;
}

const UNKNOWN_DELIVERY: ActionResult = {
  kind: 'unknown',
  message: 'no such delivery',
  notice: 'unknown_delivery',
};

/**
 * The queue dashboard's name of shard `shard` of `shards` (receiver/admin-dashboard.ts shows one
 * queue per shard): `deliveries` alone with one shard, else the shard's number before it.
 */
export function boardQueueName(shard: number, shards: number): string {
  return shards === 1 ? DELIVERY_QUEUE : `${boardShardPrefix(shard)}${DELIVERY_QUEUE}`;
}

/** What bull-board's adapter puts before a shard's queue name (its `prefix` option). */
export const boardShardPrefix = (shard: number) => `shard${String(shard)}-`;

/** Each archive read is bounded: a slow store makes a page say so, not hang. */
const ARCHIVE_DEADLINE_MS = 5_000;

/**
 * The delivery inspector's model, shared by the API, the page and the CLI: list from the timeline
 * timelines (history/delivery-timeline.ts), find one delivery by what is kept of it
 * (find-delivery.ts), show it whole (its job, its archived payload, its destinations' state), and
 * the actions, each the code its CLI command runs.
 */
export function createInspector(deps: InspectorDeps) {
  const { redis, prefix, queues } = deps;
  const sources = { redis, queues, dedupeTtlSeconds: deps.dedupeTtlSeconds };
  const shards = queues[0].layout.prefixes;
  // Its own destinations (FORWARD_URLS, FORWARD_CONFIG) and those the workers announce. It only
  // reads their state, pauses and resumes them: the failure count and the probe interval, which
  // the control takes, are what the workers' sends use.
  const control = async () => {
    const destinations = await knownDestinations(deps.forwarding, redis, prefix);
    const names = destinations.map((d) => d.name);
    return {
      destinations,
      control: destinationControl(redis, prefix, names, {
        pauseAfter: deps.forwarding.forwardPauseAfter,
        probeMs: deps.forwarding.forwardProbeSeconds * 1000,
      }),
    };
  };

  async function archived(
    event: string,
    id: string,
    receivedAt: string,
  ): Promise<ArchivedDelivery | undefined> {
    const archive = await deps.archive();
    if (archive === undefined) return undefined;
    const at = Date.parse(receivedAt);
    // The archive's time is the job's, a moment after the timeline's: a minute either side.
    const query = { ids: [id], event, since: new Date(at - 60_000), until: new Date(at + 60_000) };
    const find = async () => {
      for await (const entry of archive.find(query)) return entry;
      return undefined;
    };
    return await withDeadline(find(), ARCHIVE_DEADLINE_MS, 'the archive');
  }

  async function detail(event: string, id: string): Promise<DetailView | undefined> {
    const found = await findDelivery(sources, event, id);
    if (found === undefined) return undefined;
    const { timeline, job, jobId, queue } = found;
    const payload =
      payloadOfJob(job) ??
      (await archived(event, id, timeline.summary.received_at).catch(() => undefined))?.delivery ??
      null;
    const names = timeline.forwards.map((f) => f.destination);
    const statuses =
      names.length === 0
        ? []
        : (await (await control()).control.tick(false))
            .map((tick) => tick.status)
            .filter((status) => names.includes(status.name));
    return {
      api: {
        ...timeline.summary,
        payload,
        stored: timeline.stored,
        trace_id: timeline.traceId,
        timeline: timeline.steps,
        forwards: timeline.forwards,
      },
      jobId,
      boardQueue: boardQueueName(shards.indexOf(queue.opts.prefix ?? ''), shards.length),
      failedReason: timeline.summary.state === 'failed' ? job?.failedReason : undefined,
      destinations: statuses,
    };
  }

  return {
    detail,
    /** The store the stored audio is read from; undefined when there is none to read. */
    store: deps.store ?? (() => Promise.resolve(undefined)),
    /** Newest first; `id` narrows to that `data.id` (under every known event), the rest as ever. */
    async search(query: ListQuery & { readonly id?: string | undefined }) {
      if (query.id !== undefined) {
        const events = query.event === undefined ? deps.events : [query.event];
        const found = (await findById(sources, query.id, events))
          .map((delivery) => delivery.timeline)
          .filter((timeline) => matches(timeline, query));
        return { timelines: found.slice(0, query.limit), next: null };
      }
      return await listTimelines(redis, shards, query);
    },
    /** Every destination known (this process's and the workers' announced), with its state. */
    async destinations(): Promise<{ entry: RosterEntry; status: DestinationStatus | undefined }[]> {
      const { destinations, control: shared } = await control();
      const ticks = await shared.tick(false);
      return destinations.map((entry, index) => ({ entry, status: ticks[index]?.status }));
    },
    /** A failed delivery's job runs again with fresh attempts, as `retry <jobId>` does. */
    async retry(event: string, id: string): Promise<ActionResult> {
      const found = await detail(event, id);
      if (found === undefined) return UNKNOWN_DELIVERY;
      if (found.api.state !== 'failed')
        return {
          kind: 'conflict',
          message: `the delivery is ${found.api.state}, not failed`,
          notice: 'not_failed',
        };
      const queue = queueOf(queues, event, id);
      const job = found.jobId === undefined ? undefined : await queue.getJob(found.jobId);
      if (job === undefined || !(await job.isFailed()))
        return {
          kind: 'conflict',
          message: 'its failed job is gone: replay it instead',
          notice: 'job_gone',
        };
      await retryAfresh(job);
      const subject = { event, id, receivedAt: Date.parse(found.api.received_at) };
      await deps.timeline
        .write(subject, {
          code: 'T',
          state: 'q',
          failedIndex: '-',
        })
        .catch(() => undefined);
      return {
        kind: 'done',
        message: `job ${job.id ?? ''} put back on the queue`,
        notice: 'retried',
      };
    },
    /** A handled delivery is queued again from the archive, as `replay --id` does. */
    async replay(event: string, id: string): Promise<ActionResult> {
      const found = await detail(event, id);
      if (found === undefined) return UNKNOWN_DELIVERY;
      if (found.api.state !== 'handled')
        return {
          kind: 'conflict',
          message: `the delivery is ${found.api.state}, not handled`,
          notice: 'not_handled',
        };
      const entry = await archived(event, id, found.api.received_at);
      if (entry === undefined)
        return {
          kind: 'conflict',
          message: 'nothing archived for it (ARCHIVE_RETENTION_HOURS)',
          notice: 'not_archived',
        };
      const done = await replayDeliveries(queues, [entry], { timeline: deps.timeline });
      return done.queued === 1
        ? {
            kind: 'done',
            message: 'queued again: its handling runs as for a new delivery',
            notice: 'replayed',
          }
        : {
            kind: 'conflict',
            message: 'a replay of it is queued already',
            notice: 'replay_queued',
          };
    },
    /** `forward pause <name>` / `forward resume <name>`. */
    async setPaused(name: string, paused: boolean): Promise<ActionResult> {
      const { destinations, control: shared } = await control();
      if (!destinations.some((d) => d.name === name))
        return {
          kind: 'unknown',
          message: `no forward destination is named ${name}`,
          notice: 'unknown_destination',
        };
      const changed = await (paused ? shared.pause(name) : shared.resume(name));
      const now = paused ? 'paused' : 'active';
      return {
        kind: 'done',
        message: `${name}: ${changed ? `now ${now}` : `already ${now}`}`,
        notice: changed
          ? paused
            ? 'paused'
            : 'resumed'
          : paused
            ? 'already_paused'
            : 'already_active',
      };
    },
  };
}

export type Inspector = ReturnType<typeof createInspector>;
