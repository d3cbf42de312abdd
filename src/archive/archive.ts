import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { ArchiveArea } from '../storage/audio-store.js';
import { fileStem } from '../storage/file-name.js';
import type { Delivery } from '../webhooks/define-event.js';

/**
 * The archive of accepted deliveries, for `replay`: one small JSON file per delivery in the
 * audio store's ARCHIVE area (`.archive/` under AUDIO_DIR or S3_PREFIX), laid out by the hour it
 * was received and, inside the hour, by item, so a time range is found by listing a few hour
 * folders and an id by listing one small folder per hour, never an hour's millions of names:
 *
 *     .archive/2026-11-24/09/<file stem>/20261124T091502123Z_<job id>.json
 *
 * The path is made of the receipt time, the job id and the item's file stem (storage/file-name.ts),
 * never of a delivery's text. The same delivery archived twice (a job re-run) has the same path.
 * Entries of the first layout (`<hour>/<time>_<job id>_<stem>.json`) are still read by ranges.
 */

/** What one archive file holds. */
export interface ArchivedDelivery {
  readonly event: string;
  /** The delivery's `data.id`. */
  readonly id: string;
  /** When the receiver accepted it, ISO 8601. */
  readonly received_at: string;
  /** The job that first handled it. */
  readonly job_id: string;
  /** The delivery as accepted: `event` and `data`. */
  readonly delivery: Delivery;
}

const entrySchema = z.object({
  event: z.string(),
  id: z.string(),
  received_at: z.iso.datetime(),
  job_id: z.string(),
  delivery: z.looseObject({
    event: z.string(),
    data: z.looseObject({ id: z.string() }),
  }),
});

const HOUR_MS = 3600 * 1000;
const DAY_FOLDER = /^(\d{4}-\d{2}-\d{2})\/$/;
const HOUR_FOLDER = /^(\d{2})\/$/;
/** `<stem>/<time>_<job id>.json`, relative to its hour: neither the time nor a job id holds `_`. */
const ENTRY = /^([^/]+)\/(\d{8}T\d{9}Z)_[A-Za-z0-9-]{1,64}\.json$/;
/** The first layout's `<time>_<job id>_<stem>.json`, directly in the hour. */
const FIRST_LAYOUT_ENTRY = /^(\d{8}T\d{9}Z)_[A-Za-z0-9-]{1,64}_([^/]+)\.json$/;
const PLAIN_JOB_ID = /^[A-Za-z0-9-]{1,64}$/;
/** Archive files read at once while a query runs: what a query holds is this and a listing page. */
const READS_IN_FLIGHT = 32;

/** Which archived deliveries a query wants. Every field narrows; none: all of them. */
export interface ArchiveQuery {
  /** Received at or after. */
  readonly since?: Date;
  /** Received at or before. */
  readonly until?: Date;
  /** Only these `data.id`s. */
  readonly ids?: readonly string[];
  /** Only this event. */
  readonly event?: string;
}

/** A file the archive holds that is not a readable entry: reported, never replayed. */
export interface UnreadableEntry {
  readonly path: string;
  readonly reason: string;
}

export interface Archive {
  /** Archives one accepted delivery (the worker calls this; replays are not archived again). */
  record(entry: {
    readonly delivery: Delivery;
    readonly jobId: string;
    readonly receivedAt: string;
  }): Promise<void>;
  /** The hour folders a query's time range touches, oldest first (`2026-11-24/09/`). */
  hours(query: ArchiveQuery): Promise<string[]>;
  /**
   * The entries a query selects, hour by hour, oldest hour first (inside an hour, in the order
   * the store lists); memory is bounded by a listing page and a batch of reads, never an hour.
   */
  find(
    query: ArchiveQuery,
    onUnreadable?: (entry: UnreadableEntry) => void,
  ): AsyncGenerator<ArchivedDelivery>;
  /**
   * Removes the hours wholly older than `retentionHours` before `now`: an entry lives its
   * retention and at most one hour more. Returns the folders removed.
   */
  sweep(retentionHours: number, now?: Date): Promise<string[]>;
}

/** `2026-11-24T09:15:02.123Z` → `20261124T091502123Z`. */
function compactTime(date: Date): string {
  return date.toISOString().replace(/[-:.]/g, '');
}

function fromCompactTime(compact: string): number {
  const [, y, mo, d, h, mi, s, ms] =
    /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(\d{3})Z$/.exec(compact) ?? [];
  return Date.parse(`${y}-${mo}-${d}T${h}:${mi}:${s}.${ms}Z`);
}

/** A job id as a path segment: ours are UUIDs; anything else (a queue is an open door) hashed. */
function jobSegment(jobId: string): string {
  return PLAIN_JOB_ID.test(jobId)
    ? jobId
    : createHash('sha256').update(jobId, 'utf8').digest('hex').slice(0, 32);
}

/** The path of a delivery's archive file. */
export function archivePath(receivedAt: string, jobId: string, id: string): string {
  const date = new Date(receivedAt);
  if (Number.isNaN(date.getTime())) throw new Error(`not a time: ${JSON.stringify(receivedAt)}`);
  const iso = date.toISOString();
  return `${hourFolder(iso)}${fileStem(id)}/${compactTime(date)}_${jobSegment(jobId)}.json`;
}

/** The hour folder a time falls in: `2026-11-24T09:15:02.123Z` → `2026-11-24/09/`. */
export function hourFolder(time: string): string {
  const iso = new Date(time).toISOString();
  return `${iso.slice(0, 10)}/${iso.slice(11, 13)}/`;
}

/** An entry's name within its hour, either layout, as its stem and time; undefined if not one. */
function entryName(name: string): { stem: string; time: number } | undefined {
  const match = ENTRY.exec(name);
  if (match !== null) return { stem: match[1] ?? '', time: fromCompactTime(match[2] ?? '') };
  const first = FIRST_LAYOUT_ENTRY.exec(name);
  if (first !== null) return { stem: first[2] ?? '', time: fromCompactTime(first[1] ?? '') };
  return undefined;
}

interface Candidate {
  readonly path: string;
  readonly time: number;
}

/** Every name a listing gives, gathered: only for the day and hour folders, a few dozen. */
async function names(listing: AsyncIterable<string>): Promise<string[]> {
  const all: string[] = [];
  for await (const name of listing) all.push(name);
  return all;
}

async function isEmpty(listing: AsyncIterable<string>): Promise<boolean> {
  // Returning from the loop closes the listing (a directory handle, a paged request).
  for await (const _name of listing) return false;
  return true;
}

export function createArchive(area: ArchiveArea): Archive {
  /** The hour folders that may hold entries in [since, until], oldest first. */
  async function hoursBetween(since: number, until: number): Promise<string[]> {
    const days = (await names(area.list('')))
      .flatMap((name) => DAY_FOLDER.exec(name)?.[1] ?? [])
      .sort();
    const hours: string[] = [];
    for (const day of days) {
      const dayStart = Date.parse(`${day}T00:00:00Z`);
      if (dayStart + 24 * HOUR_MS <= since || dayStart > until) continue;
      const inDay = (await names(area.list(`${day}/`)))
        .flatMap((name) => HOUR_FOLDER.exec(name)?.[1] ?? [])
        .sort();
      for (const hour of inDay) {
        const hourStart = dayStart + Number(hour) * HOUR_MS;
        if (hourStart + HOUR_MS <= since || hourStart > until) continue;
        hours.push(`${day}/${hour}/`);
      }
    }
    return hours;
  }

  const range = (query: ArchiveQuery) => ({
    since: query.since?.getTime() ?? -Infinity,
    until: query.until?.getTime() ?? Infinity,
  });

  /**
   * The files a query selects by name, one at a time: with ids, each id's own folder in each
   * hour (one short listing per hour and id); else every file of each hour, streamed.
   */
  async function* candidates(query: ArchiveQuery): AsyncGenerator<Candidate> {
    const { since, until } = range(query);
    const stems = query.ids === undefined ? undefined : [...new Set(query.ids.map(fileStem))];
    for (const hour of await hoursBetween(since, until)) {
      const listings =
        stems === undefined
          ? [{ under: hour, listing: area.list(hour, { deep: true }) }]
          : stems.map((stem) => ({
              under: `${hour}${stem}/`,
              listing: area.list(`${hour}${stem}/`),
            }));
      for (const { under, listing } of listings) {
        for await (const name of listing) {
          const path = `${under}${name}`;
          const entry = entryName(path.slice(hour.length));
          if (entry === undefined || entry.time < since || entry.time > until) continue;
          yield { path, time: entry.time };
        }
      }
    }
  }

  async function read(
    candidate: Candidate,
  ): Promise<ArchivedDelivery | { unreadable: UnreadableEntry }> {
    const bytes = await area.get(candidate.path);
    // Swept meanwhile (another process's retention sweep): not an entry any more.
    if (bytes === undefined) return { unreadable: { path: candidate.path, reason: 'gone' } };
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.from(bytes).toString('utf8'));
    } catch (error: unknown) {
      return { unreadable: { path: candidate.path, reason: String(error) } };
    }
    const entry = entrySchema.safeParse(parsed);
    if (!entry.success)
      return { unreadable: { path: candidate.path, reason: entry.error.issues[0]?.message ?? '' } };
    return entry.data;
  }

  return {
    async record({ delivery, jobId, receivedAt }) {
      const entry: ArchivedDelivery = {
        event: delivery.event,
        id: delivery.data.id,
        received_at: receivedAt,
        job_id: jobId,
        delivery,
      };
      await area.put(
        archivePath(receivedAt, jobId, delivery.data.id),
        Buffer.from(JSON.stringify(entry), 'utf8'),
      );
    },

    hours(query) {
      const { since, until } = range(query);
      return hoursBetween(since, until);
    },

    async *find(query, onUnreadable) {
      const ids = query.ids === undefined ? undefined : new Set(query.ids);
      const readBatch = async function* (batch: Candidate[]) {
        for (const entry of await Promise.all(batch.map(read))) {
          if ('unreadable' in entry) {
            onUnreadable?.(entry.unreadable);
            continue;
          }
          // Selected by the id's file stem; the id itself decides.
          if (ids !== undefined && !ids.has(entry.id)) continue;
          if (query.event !== undefined && entry.event !== query.event) continue;
          yield entry;
        }
      };
      let batch: Candidate[] = [];
      for await (const candidate of candidates(query)) {
        batch.push(candidate);
        if (batch.length < READS_IN_FLIGHT) continue;
        yield* readBatch(batch);
        batch = [];
      }
      yield* readBatch(batch);
    },

    async sweep(retentionHours, now = new Date()) {
      const cutoff = now.getTime() - retentionHours * HOUR_MS;
      const removed: string[] = [];
      for (const folder of await hoursBetween(-Infinity, cutoff)) {
        const [day = '', hour = ''] = folder.split('/');
        if (Date.parse(`${day}T${hour}:00:00Z`) + HOUR_MS > cutoff) continue;
        await area.remove(folder);
        removed.push(folder);
      }
      // A day folder left empty goes too (another sweeper may be removing it as well).
      for (const name of await names(area.list(''))) {
        const day = DAY_FOLDER.exec(name)?.[1];
        if (day === undefined || Date.parse(`${day}T00:00:00Z`) + 24 * HOUR_MS > cutoff) continue;
        if (await isEmpty(area.list(name))) await area.remove(name);
      }
      return removed;
    },
  };
}
