import type { ArchiveArea } from '../storage/audio-store.js';
import { archivedDelivery, type Accepted } from './archived-delivery.js';
import { batchWriter, type BatchedLine } from './batch-writer.js';
import { hourFolder } from './hour-folder.js';
import { bucketFolder, idBucket } from './id-bucket.js';
import { segmentAppender } from './segment-appender.js';

type WriteLine = (hour: string, id: string, line: string) => BatchedLine;

/** Lines go in segments where the area can append (the local store), else in batches (S3). */
function lineWriter(area: ArchiveArea, batchLingerMs: number): WriteLine {
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
  area: ArchiveArea,
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
