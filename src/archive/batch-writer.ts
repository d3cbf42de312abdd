import type { ArchiveArea } from '../storage/audio-store.js';
import { batchFileName, writerName } from './file-kind.js';
import { addBucket } from './id-bucket.js';

/**
 * How long an entry waits for others to share its batch's PUT, and the most lines a batch holds.
 * 50 ms: an S3 job's download and two PUTs take longer (the bench's took 20–200 ms), and its
 * archive write starts with it. A batch is a few hundred KB at most.
 */
export const BATCH_LINGER_MS = 50;
const BATCH_MAX_LINES = 500;

interface OpenBatch {
  readonly lines: string[];
  /** The bitmap of the buckets its lines' ids fall in. */
  readonly buckets: Buffer;
  /** Ends the linger: the batch is written now. */
  close(): void;
  readonly written: Promise<void>;
}

/**
 * Puts lines as batches: the lines of one hour that arrive within `lingerMs` of the first go in
 * one object, written whole by one PUT (BATCH_MAX_LINES end a batch sooner); each call resolves
 * once its batch is written, and a batch that fails fails its own lines' calls only. Each batch is
 * a new object (the writer's name and a sequence number), so writers never meet. Not the
 * segments' group commit: with one PUT in flight, a batch would hold what arrives during one PUT,
 * a few entries at S3's latencies; the linger fills it, and bounds the wait.
 */
export function batchWriter(put: ArchiveArea['put'], lingerMs: number) {
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
        await put(
          batchFileName(hour, writer, sequence, buckets),
          Buffer.from(lines.join(''), 'utf8'),
        );
      }),
    };
    open.set(hour, batch);
    return batch;
  };
  /** `hour`: its folder; `bucket`: its line's id's (id-bucket.ts); `line`: an entry and `\n`. */
  return async (hour: string, bucket: number, line: string): Promise<void> => {
    const batch = open.get(hour) ?? start(hour);
    batch.lines.push(line);
    addBucket(batch.buckets, bucket);
    if (batch.lines.length >= BATCH_MAX_LINES) {
      open.delete(hour);
      batch.close();
    }
    await batch.written;
  };
}
