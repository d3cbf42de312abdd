import type { FileArea } from '../storage/audio-store.js';
import { archivedDelivery, type Accepted } from './archived-delivery.js';
import { batchWriter, type BatchedLine } from './batch-writer.js';
import { hourFolder, bucketFolder, idBucket } from './folders.js';
import { groupCommit } from '../util/group-commit.js';
import { segmentFileName, writerName } from './file-kind.js';

type WriteLine = (hour: string, id: string, line: string) => BatchedLine;

/** Lines go in segments where the area can append (the local store), else in batches (S3). */
function lineWriter(area: FileArea, batchLingerMs: number): WriteLine {
  if (area.append !== undefined) {
    const append = segmentAppender(area.append.bind(area));
    return (hour, id, line) => {
      // An append does not wait for others: it is written at once.
      const appended = append(`${hour}${bucketFolder(id)}`, line);
      appended.catch(() => undefined);
      return { written: () => appended };
    };
  }
  const putInBatch = batchWriter(area.put.bind(area), batchLingerMs);
  return (hour, id, line) => putInBatch(hour, idBucket(id), line);
}

/**
 * Starts writing each accepted delivery as one line of JSON in the hour it was received; its
 * `written()` resolves once the line is written. It never throws: an entry that cannot be made
 * (a receipt time that is no time) fails through `written()`, as a write that failed does.
 */
export function entryWriter(
  area: FileArea,
  batchLingerMs: number,
): (accepted: Accepted) => BatchedLine {
  const write = lineWriter(area, batchLingerMs);
  return (accepted) => {
    try {
      const entry = archivedDelivery(accepted);
      return write(hourFolder(entry.received_at), entry.id, `${JSON.stringify(entry)}\n`);
    } catch (error: unknown) {
      return {
        written: () => Promise.reject(error instanceof Error ? error : new Error(String(error))),
      };
    }
  };
}

/** The lines waiting for one bucket folder's next append, and the group commit that takes them. */
interface PendingAppends {
  readonly lines: string[];
  /** Callers whose line is in `lines` or in the append in flight. */
  waiting: number;
  readonly commit: () => Promise<void>;
}

/**
 * Appends lines to this writer's segments, a group commit per bucket folder (util/group-commit.ts):
 * one append in flight to the writer's segment there, the lines that arrive meanwhile go in the
 * next one together, and each call resolves once its line is written. A folder's pending appends
 * are held only while lines for it are waiting.
 */
export function segmentAppender(append: NonNullable<FileArea['append']>) {
  let writer = writerName();
  const pending = new Map<string, PendingAppends>();
  const start = (bucketFolder: string): PendingAppends => {
    const lines: string[] = [];
    const commit = groupCommit(async () => {
      // Every line pushed before this run started: the callers it covers.
      const appended = Buffer.from(lines.splice(0).join(''), 'utf8');
      await append(segmentFileName(bucketFolder, writer), appended).catch((error: unknown) => {
        // A failed append may have written part of its lines: later ones go to new segments, so
        // a torn line is only ever the last of its file, and never takes a whole line with it.
        writer = writerName();
        throw error;
      });
    });
    return { lines, waiting: 0, commit };
  };
  /** `bucketFolder`: `<hour>~3f/`; `line`: one entry and its newline. */
  return async (bucketFolder: string, line: string): Promise<void> => {
    const held = pending.get(bucketFolder) ?? start(bucketFolder);
    pending.set(bucketFolder, held);
    held.lines.push(line);
    held.waiting++;
    try {
      await held.commit();
    } finally {
      // No caller waiting: no append runs or is due, so the folder's next line starts afresh.
      if (--held.waiting === 0) pending.delete(bucketFolder);
    }
  };
}
