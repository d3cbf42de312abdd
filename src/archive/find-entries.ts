import type { ArchiveArea } from '../storage/audio-store.js';
import { queryRange, type ArchiveQuery } from './archive-query.js';
import type { ArchivedDelivery } from './archived-delivery.js';
import { listCandidates, type Candidate } from './list-candidates.js';
import { parseEntry, type EntryRead, type UnreadableEntry } from './parse-entry.js';
import { parseLines } from './parse-lines.js';

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

async function read(area: ArchiveArea, candidate: Candidate): Promise<EntryRead[]> {
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
  area: ArchiveArea,
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
