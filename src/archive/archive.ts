import { createHash, randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { ArchiveArea } from '../storage/audio-store.js';
import { fileStem } from '../storage/file-name.js';
import { groupCommit } from '../util/group-commit.js';
import type { Delivery } from '../webhooks/define-event.js';

/**
 * The archive of accepted deliveries, for `replay`, in the audio store's ARCHIVE area (`.archive/`
 * under AUDIO_DIR or S3_PREFIX), laid out by the hour each was received (UTC), so a time range
 * is found by listing a few hour folders, never an hour's millions of names. Inside the hour:
 *
 * - **Segments**, in an area that can append (the local store): one line of JSON per delivery,
 *   appended to its writer's file of the hour and of one of 256 buckets of the id's SHA-256:
 *
 *       .archive/2026-11-24/09/~3f/20261125T061502123Z-1a2b3c4d.ndjson
 *
 *   Each writer (a worker process) appends only to its own files, so lines never interleave; an
 *   append that fails moves the writer to new files, so a torn line is only ever a file's last.
 *   An id is found by reading its bucket's files in each hour (1/256 of the hour). An entry costs
 *   one append to a file that exists, where a file per entry cost two new inodes (a folder and
 *   the file), the largest part of the archive's price in the bench (docs/performance.md).
 * - **Batches**, in an area that writes whole objects only (S3; a custom store's): the entries a
 *   writer archives within BATCH_LINGER_MS of each other, as lines of one object of the hour,
 *   whose name says which of the 256 buckets its lines' ids fall in (a bitmap, in hex):
 *
 *       .archive/2026-11-24/09/~batches/20261125T061502123Z-1a2b3c4d-17.<64 hex>.ndjson
 *
 *   An entry costs a share of one PUT, where an object per entry cost a PUT each: on S3 every
 *   request is paid for twice, in the worker's CPU (the SDK's signing and middleware) and in the
 *   store's (docs/performance.md). The job's own download and store take longer than the linger,
 *   and the write starts with the job, so the wait is hidden. An id is found by listing each
 *   hour's batches and reading those whose name holds its bucket.
 * - **Entry files**, written by versions before the batches (still read): one small JSON file per
 *   delivery, by item: `.archive/2026-11-24/09/<file stem>/20261124T091502123Z_<job id>.json`.
 *
 * Paths are made of the receipt time, the job id, the id's hash or file stem
 * (storage/file-name.ts) and a writer's random name, never of a delivery's text. The same
 * delivery archived twice (a job re-run) is read once: entry files by their path, lines by their
 * job id within their bucket (segments) or hour (batches). Entries of the first layout
 * (`<hour>/<time>_<job id>_<stem>.json`) are still read by ranges.
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
/** `~<bucket>/<writer>.ndjson`, relative to its hour: `~` and two hex digits are never a stem. */
const SEGMENT = /^(~[0-9a-f]{2})\/\d{8}T\d{9}Z-[0-9a-f]{8}\.ndjson$/;
/** The batches' folder in an hour: a `~` stem is `~` and 64 hex digits (storage/file-name.ts). */
const BATCHES = '~batches/';
/** `~batches/<writer>-<sequence>.<buckets>.ndjson`, relative to its hour. */
const BATCH = /^~batches\/\d{8}T\d{9}Z-[0-9a-f]{8}-\d{1,15}\.([0-9a-f]{64})\.ndjson$/;
/**
 * How long an entry waits for others to share its batch's PUT, and the most lines a batch holds.
 * 50 ms: an S3 job's download and two PUTs take longer (the bench's took 20–200 ms), and its
 * archive write starts with it. A batch is a few hundred KB at most.
 */
const BATCH_LINGER_MS = 50;
const BATCH_MAX_LINES = 500;
/**
 * Archive files read at once while a query runs: what a query holds is these and a listing page.
 * A segment holds a writer's share of 1/256 of an hour (about 800 entries, 0.5 MB, for a writer
 * archiving 200,000 an hour), so fewer are read at once.
 */
const READS_IN_FLIGHT = 32;
const SEGMENT_READS_IN_FLIGHT = 4;

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
  /**
   * Archives one accepted delivery (the worker calls this; replays are not archived again).
   * Resolves once the entry is written (appended, or its file written).
   */
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

/** An id's bucket, 0–255: the first byte of its SHA-256. */
function bucketOf(id: string): number {
  return createHash('sha256').update(id, 'utf8').digest()[0] ?? 0;
}

/** The folder of an id's bucket within its hour: `~` and its bucket in two hex digits. */
export function bucketFolder(id: string): string {
  return `~${bucketOf(id).toString(16).padStart(2, '0')}/`;
}

/** Whether a batch's bitmap (64 hex digits, bucket b at bit b % 8 of byte b / 8) holds `bucket`. */
function holdsBucket(bitmap: string, bucket: number): boolean {
  const byte = Number.parseInt(bitmap.slice((bucket >> 3) * 2, (bucket >> 3) * 2 + 2), 16);
  return (byte & (1 << (bucket & 7))) !== 0;
}

/** A writer's name for its segments: when it started, and 32 random bits. */
function writerName(): string {
  return `${compactTime(new Date())}-${randomBytes(4).toString('hex')}`;
}

/**
 * Appends lines to segments, a group commit per segment (util/group-commit.ts): one append in
 * flight per file, the lines that arrive meanwhile go in the next one together, and each record
 * resolves once its line is written. A segment is held only while lines for it are waiting.
 */
function segmentWriter(append: NonNullable<ArchiveArea['append']>) {
  let writer = writerName();
  const segments = new Map<
    string,
    { lines: string[]; waiting: number; commit: () => Promise<void> }
  >();
  const segment = (folder: string) => {
    const lines: string[] = [];
    const commit = groupCommit(async () => {
      // Every line pushed before this run started: the callers it covers.
      const batch = Buffer.from(lines.splice(0).join(''), 'utf8');
      await append(`${folder}${writer}.ndjson`, batch).catch((error: unknown) => {
        // A failed append may have written part of its lines: later ones go to new files, so
        // a torn line is only ever the last of its file, and never takes a whole line with it.
        writer = writerName();
        throw error;
      });
    });
    return { lines, waiting: 0, commit };
  };
  return async (folder: string, line: string) => {
    const held = segments.get(folder) ?? segment(folder);
    segments.set(folder, held);
    held.lines.push(line);
    held.waiting++;
    try {
      await held.commit();
    } finally {
      // No caller waiting: no append runs or is due, so the next line may start a new segment.
      if (--held.waiting === 0) segments.delete(folder);
    }
  };
}

/**
 * Puts lines as batches: the lines of one hour that arrive within `lingerMs` of the first go in
 * one object, written whole by one PUT (BATCH_MAX_LINES end a batch sooner); each record resolves
 * once its batch is written, and a batch that fails fails its records only. Each batch is a new
 * object (the writer's name and a sequence number), so writers never meet. Not the segments'
 * groupCommit: with one PUT in flight, a batch would hold what arrives during one PUT, a few
 * entries at S3's latencies; the linger fills it, and bounds the wait.
 */
function batchWriter(put: ArchiveArea['put'], lingerMs: number) {
  const writer = writerName();
  let sequence = 0;
  const open = new Map<string, OpenBatch>();
  const start = (hour: string): OpenBatch => {
    let due = () => {};
    const closed = new Promise<void>((resolve) => (due = resolve));
    const timer = setTimeout(due, lingerMs);
    const lines: string[] = [];
    const buckets = Buffer.alloc(32);
    const batch: OpenBatch = {
      lines,
      buckets,
      close() {
        clearTimeout(timer);
        due();
      },
      written: closed.then(async () => {
        if (open.get(hour) === batch) open.delete(hour);
        sequence++;
        const name = `${hour}${BATCHES}${writer}-${sequence}.${buckets.toString('hex')}.ndjson`;
        await put(name, Buffer.from(lines.join(''), 'utf8'));
      }),
    };
    open.set(hour, batch);
    return batch;
  };
  return async (hour: string, bucket: number, line: string) => {
    const batch = open.get(hour) ?? start(hour);
    batch.lines.push(line);
    batch.buckets[bucket >> 3] = (batch.buckets[bucket >> 3] ?? 0) | (1 << (bucket & 7));
    if (batch.lines.length >= BATCH_MAX_LINES) {
      open.delete(hour);
      batch.close();
    }
    await batch.written;
  };
}

interface OpenBatch {
  readonly lines: string[];
  /** The bitmap of the buckets its lines' ids fall in. */
  readonly buckets: Buffer;
  /** Ends the linger: the batch is written now. */
  close(): void;
  readonly written: Promise<void>;
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

/** A file a query reads: an entry file, or a segment or batch of many entries (lines). */
interface Candidate {
  readonly path: string;
  /**
   * Where a re-run's line lands beside its first run's, for a file of lines: a segment's bucket
   * folder (`2026-11-24/09/~3f/`), a batch's hour (`2026-11-24/09/~batches/`); undefined for an
   * entry file.
   */
  readonly scope?: string;
  /** A segment: large, so fewer are read at once. */
  readonly segment?: true;
}

type Read = ArchivedDelivery | { unreadable: UnreadableEntry };

/** One entry's text, checked: the entry, or why it is not one. */
function parseEntry(path: string, text: string): Read {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error: unknown) {
    return { unreadable: { path, reason: String(error) } };
  }
  const entry = entrySchema.safeParse(parsed);
  if (!entry.success) return { unreadable: { path, reason: entry.error.issues[0]?.message ?? '' } };
  return entry.data;
}

/**
 * A segment's or a batch's entries, one per line. A last line without its newline is being
 * appended as it is read, or was when its writer stopped (a crash, a full disk): reported, never
 * replayed. (A batch is written whole, so never has one.)
 */
function parseLines(path: string, bytes: Uint8Array): Read[] {
  const lines = Buffer.from(bytes).toString('utf8').split('\n');
  const last = lines.pop() ?? '';
  const entries = lines.map((line, at) => parseEntry(`${path}:${at + 1}`, line));
  if (last !== '')
    entries.push({
      unreadable: {
        path: `${path}:${lines.length + 1}`,
        reason: 'an unfinished line (being appended as it was read, or its writer stopped then)',
      },
    });
  return entries;
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

export interface ArchiveOptions {
  /** How long an entry waits for others to share its batch (areas without append). @defaultValue 50 ms */
  readonly batchLingerMs?: number;
}

export function createArchive(area: ArchiveArea, options: ArchiveOptions = {}): Archive {
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
   * The files a query selects by name, one at a time: with ids, in each hour, each id's own
   * folder of entry files, its bucket's segments and the batches whose names hold its bucket (a
   * listing of a few names each, and the hour's batches); else every file of each hour, streamed
   * (a folder's files together: a bucket's segments, an hour's batches, are consecutive).
   */
  async function* candidates(query: ArchiveQuery): AsyncGenerator<Candidate> {
    const { since, until } = range(query);
    const folders =
      query.ids === undefined
        ? undefined
        : [...new Set(query.ids.flatMap((id) => [`${fileStem(id)}/`, bucketFolder(id)])), BATCHES];
    const buckets = query.ids?.map(bucketOf);
    for (const hour of await hoursBetween(since, until)) {
      const listings =
        folders === undefined
          ? [{ under: hour, listing: area.list(hour, { deep: true }) }]
          : folders.map((folder) => ({
              under: `${hour}${folder}`,
              listing: area.list(`${hour}${folder}`),
            }));
      for (const { under, listing } of listings) {
        for await (const name of listing) {
          const path = `${under}${name}`;
          const inHour = path.slice(hour.length);
          const segment = SEGMENT.exec(inHour);
          if (segment !== null) {
            yield { path, scope: `${hour}${segment[1] ?? ''}/`, segment: true };
            continue;
          }
          const batch = BATCH.exec(inHour);
          if (batch !== null) {
            const bitmap = batch[1] ?? '';
            if (buckets === undefined || buckets.some((bucket) => holdsBucket(bitmap, bucket)))
              yield { path, scope: `${hour}${BATCHES}` };
            continue;
          }
          const entry = entryName(inHour);
          if (entry === undefined || entry.time < since || entry.time > until) continue;
          yield { path };
        }
      }
    }
  }

  async function read(candidate: Candidate): Promise<Read[]> {
    const bytes = await area.get(candidate.path);
    // Swept meanwhile (another process's retention sweep): not an entry any more.
    if (bytes === undefined) return [{ unreadable: { path: candidate.path, reason: 'gone' } }];
    if (candidate.scope !== undefined) return parseLines(candidate.path, bytes);
    return [parseEntry(candidate.path, Buffer.from(bytes).toString('utf8'))];
  }

  const append = area.append === undefined ? undefined : segmentWriter(area.append.bind(area));
  const putInBatch = batchWriter(area.put.bind(area), options.batchLingerMs ?? BATCH_LINGER_MS);

  return {
    async record({ delivery, jobId, receivedAt }) {
      const entry: ArchivedDelivery = {
        event: delivery.event,
        id: delivery.data.id,
        received_at: receivedAt,
        job_id: jobId,
        delivery,
      };
      const text = JSON.stringify(entry);
      const hour = hourFolder(receivedAt);
      if (append !== undefined) await append(`${hour}${bucketFolder(entry.id)}`, `${text}\n`);
      else await putInBatch(hour, bucketOf(entry.id), `${text}\n`);
    },

    hours(query) {
      const { since, until } = range(query);
      return hoursBetween(since, until);
    },

    async *find(query, onUnreadable) {
      const { since, until } = range(query);
      const ids = query.ids === undefined ? undefined : new Set(query.ids);
      // Selected by the id's file stem or bucket; the id itself decides.
      const wanted = (entry: ArchivedDelivery) =>
        (ids === undefined || ids.has(entry.id)) &&
        (query.event === undefined || entry.event === query.event);
      // A job re-run writes its entry again, in the same scope (its id's bucket of the hour it was
      // received, or that hour's batches): the job ids of the scope being read are all that is
      // held (the wanted ones of an hour, for batches). An entry file's time is in its name,
      // checked before it was read; a line's, here.
      let scope: string | undefined;
      let jobsInScope = new Set<string>();
      const newInScope = (entry: ArchivedDelivery, inScope: string) => {
        if (inScope !== scope) {
          scope = inScope;
          jobsInScope = new Set();
        }
        const time = Date.parse(entry.received_at);
        if (time < since || time > until || jobsInScope.has(entry.job_id)) return false;
        jobsInScope.add(entry.job_id);
        return true;
      };
      const readAll = async function* (files: Candidate[]) {
        const contents = await Promise.all(files.map(read));
        for (const [at, entries] of contents.entries()) {
          const inScope = files[at]?.scope;
          for (const entry of entries) {
            if ('unreadable' in entry) onUnreadable?.(entry.unreadable);
            else if (wanted(entry) && (inScope === undefined || newInScope(entry, inScope)))
              yield entry;
          }
        }
      };
      let files: Candidate[] = [];
      let segments = 0;
      for await (const candidate of candidates(query)) {
        files.push(candidate);
        if (candidate.segment === true) segments++;
        if (files.length < READS_IN_FLIGHT && segments < SEGMENT_READS_IN_FLIGHT) continue;
        yield* readAll(files);
        files = [];
        segments = 0;
      }
      yield* readAll(files);
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
