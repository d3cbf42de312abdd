import type { ArchiveArea } from '../storage/audio-store.js';
import { fileStem } from '../storage/file-name.js';
import { queryRange, type ArchiveQuery } from './archive-query.js';
import { BATCH_FOLDER, fileKind } from './file-kind.js';
import { bucketFolder, holdsBucket, idBucket } from './id-bucket.js';
import { listHours } from './list-hours.js';

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
  area: ArchiveArea,
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
