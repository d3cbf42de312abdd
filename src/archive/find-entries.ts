import type { FileArea } from '../storage/audio-store.js';
import { queryRange, type ArchiveQuery, type ArchivedDelivery } from './archived-delivery.js';
import { parseEntry, type EntryRead, type UnreadableEntry, parseLines } from './parse-entry.js';
import { fileStem } from '../storage/file-name.js';
import { BATCH_FOLDER, fileKind } from './file-kind.js';
import { bucketFolder, holdsBucket, idBucket } from './folders.js';
import { listHours } from './list-hours.js';

/**
 * Archive files read at once while a query runs: what a query holds is these and a listing page.
 * A segment holds a writer's share of 1/256 of an hour (about 800 entries, 0.5 MB, for a writer
 * archiving 200,000 an hour), so fewer are read at once.
 */
const READS_IN_FLIGHT = 32;
const SEGMENT_READS_IN_FLIGHT = 4;

/** The candidates, in rounds of files read at once. */
async function* readRounds(candidates: AsyncIterable<Candidate>): AsyncGenerator<Candidate[]> {
  let round: Candidate[] = [];
  let segments = 0;
  for await (const candidate of candidates) {
    round.push(candidate);
    if (candidate.segment === true) segments++;
    if (round.length < READS_IN_FLIGHT && segments < SEGMENT_READS_IN_FLIGHT) continue;
    yield round;
    round = [];
    segments = 0;
  }
  if (round.length > 0) yield round;
}

async function read(area: FileArea, candidate: Candidate): Promise<EntryRead[]> {
  const bytes = await area.get(candidate.path);
  // Swept meanwhile (another process's retention sweep): not an entry any more.
  if (bytes === undefined) return [{ unreadable: { path: candidate.path, reason: 'gone' } }];
  if (candidate.scope !== undefined) return parseLines(candidate.path, bytes);
  return [parseEntry(candidate.path, Buffer.from(bytes).toString('utf8'))];
}

/** Whether the query wants an entry: its file was picked by id stem or bucket; the id decides. */
function wantedBy(query: ArchiveQuery): (entry: ArchivedDelivery) => boolean {
  const ids = query.ids === undefined ? undefined : new Set(query.ids);
  return (entry) =>
    (ids === undefined || ids.has(entry.id)) &&
    (query.event === undefined || entry.event === query.event);
}

/**
 * Whether a line is in the range and its job's first in its scope. A job re-run writes its entry
 * again, in the same scope (its id's bucket of the hour it was received, or that hour's batches):
 * the job ids of the scope being read are all that is held (the wanted ones of an hour, for
 * batches). An entry file's time is in its name, checked before it was read; a line's, here.
 */
function firstInScope(since: number, until: number) {
  let scope: string | undefined;
  let jobsInScope = new Set<string>();
  return (entry: ArchivedDelivery, inScope: string): boolean => {
    if (inScope !== scope) {
      scope = inScope;
      jobsInScope = new Set();
    }
    const time = Date.parse(entry.received_at);
    if (time < since || time > until || jobsInScope.has(entry.job_id)) return false;
    jobsInScope.add(entry.job_id);
    return true;
  };
}

/** The entries a query selects (Archive['find']). */
export async function* findEntries(
  area: FileArea,
  query: ArchiveQuery,
  onUnreadable?: (entry: UnreadableEntry) => void,
): AsyncGenerator<ArchivedDelivery> {
  const { since, until } = queryRange(query);
  const wanted = wantedBy(query);
  const isFirst = firstInScope(since, until);
  for await (const round of readRounds(listCandidates(area, query))) {
    const contents = await Promise.all(round.map((candidate) => read(area, candidate)));
    for (const [at, entries] of contents.entries()) {
      const scope = round[at]?.scope;
      for (const entry of entries) {
        if ('unreadable' in entry) onUnreadable?.(entry.unreadable);
        else if (wanted(entry) && (scope === undefined || isFirst(entry, scope))) yield entry;
      }
    }
  }
}

/** A file a query reads: an entry file, or a segment or batch of many entries (lines). */
export interface Candidate {
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

/** What narrows the files of an hour: the query's range, and its ids' buckets if it has ids. */
interface Selection {
  readonly since: number;
  readonly until: number;
  readonly buckets: readonly number[] | undefined;
}

/** The folders of an hour that can hold the ids: each id's entry files' and bucket's; batches'. */
function idFolders(ids: readonly string[]): string[] {
  return [...new Set(ids.flatMap((id) => [`${fileStem(id)}/`, bucketFolder(id)])), BATCH_FOLDER];
}

/** What the query reads of a file listed in `hour`, by its name; undefined if nothing. */
function candidate(hour: string, path: string, selection: Selection): Candidate | undefined {
  const kind = fileKind(path.slice(hour.length));
  if (kind === undefined) return undefined;
  switch (kind.kind) {
    case 'segment':
      return { path, scope: `${hour}${kind.folder}`, segment: true };
    case 'batch': {
      const { buckets } = selection;
      const holds =
        buckets === undefined || buckets.some((bucket) => holdsBucket(kind.bitmap, bucket));
      return holds ? { path, scope: `${hour}${BATCH_FOLDER}` } : undefined;
    }
    case 'entry file':
      return kind.time < selection.since || kind.time > selection.until ? undefined : { path };
  }
}

/**
 * The files a query selects by name, one at a time: with ids, in each hour, each id's own
 * folder of entry files, its bucket's segments and the batches whose names hold its bucket (a
 * listing of a few names each, and the hour's batches); else every file of each hour, streamed
 * (a folder's files together: a bucket's segments, an hour's batches, are consecutive).
 */
export async function* listCandidates(
  area: FileArea,
  query: ArchiveQuery,
): AsyncGenerator<Candidate> {
  const { since, until } = queryRange(query);
  const folders = query.ids === undefined ? undefined : idFolders(query.ids);
  const selection: Selection = { since, until, buckets: query.ids?.map(idBucket) };
  for (const hour of await listHours(area, since, until)) {
    const listings =
      folders === undefined
        ? [{ under: hour, listing: area.list(hour, { deep: true }) }]
        : folders.map((folder) => ({
            under: `${hour}${folder}`,
            listing: area.list(`${hour}${folder}`),
          }));
    for (const { under, listing } of listings) {
      for await (const name of listing) {
        const selected = candidate(hour, `${under}${name}`, selection);
        if (selected !== undefined) yield selected;
      }
    }
  }
}
