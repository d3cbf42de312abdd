import type { ArchiveArea } from '../storage/audio-store.js';
import { archivedDelivery, type Accepted } from './archived-delivery.js';
import { batchWriter } from './batch-writer.js';
import { hourFolder } from './hour-folder.js';
import { bucketFolder, idBucket } from './id-bucket.js';
import { segmentAppender } from './segment-appender.js';

type WriteLine = (hour: string, id: string, line: string) => Promise<void>;

/** Lines go in segments where the area can append (the local store), else in batches (S3). */
function lineWriter(area: ArchiveArea, batchLingerMs: number): WriteLine {
  if (area.append !== undefined) {
    const append = segmentAppender(area.append.bind(area));
    return (hour, id, line) => append(`${hour}${bucketFolder(id)}`, line);
  }
  const putInBatch = batchWriter(area.put.bind(area), batchLingerMs);
  return (hour, id, line) => putInBatch(hour, idBucket(id), line);
}

/**
 * Writes each accepted delivery as one line of JSON in the hour it was received; resolves once
 * the line is written.
 */
export function entryWriter(
  area: ArchiveArea,
  batchLingerMs: number,
): (accepted: Accepted) => Promise<void> {
  const write = lineWriter(area, batchLingerMs);
  return async (accepted) => {
    const entry = archivedDelivery(accepted);
    await write(hourFolder(entry.received_at), entry.id, `${JSON.stringify(entry)}\n`);
  };
}
