import type { FileArea } from '../storage/audio-store.js';
import { batchFileName, writerName } from './file-kind.js';
import { addBucket } from './folders.js';

/**
 * How long a batch gathers lines while none of them is waited for, and the most lines it holds.
 * The linger bounds the PUTs of a writer whose jobs take long (one per linger at most, where an
 * S3 job's download and two PUTs take longer than that); a job that waits for its line
 * ends it sooner. A batch is a few hundred KB at most.
 */
export const BATCH_LINGER_MS = 50;
const BATCH_MAX_LINES = 500;

/** One line put in a batch. */
export interface BatchedLine {
  /**
   * Resolves once the line's batch is written. Calling it says the caller now waits for it: the
   * batch is put at once, or as soon as the writer's PUT in flight ends, without lingering.
   */
  written(): Promise<void>;
}

interface OpenBatch {
  readonly lines: string[];
  /** The bitmap of the buckets its lines' ids fall in. */
  readonly buckets: Buffer;
  /** Someone waits for it: it is put at once when no PUT of this writer is in flight, else when one ends. */
  waited: boolean;
  /** Ends the linger: the batch is written now. */
  close(): void;
  readonly written: Promise<void>;
}

/**
 * Puts lines as batches: the lines of one hour go in one object, written whole by one PUT; each
 * line's `written` resolves once its batch is written, and a batch that fails fails its own
 * lines only. Each batch is a new object (the writer's name and a sequence number), so writers
 * never meet.
 *
 * A batch is put when the first of these comes: a line's caller waits for it and no PUT of
 * this writer is in flight (else when one ends: a group commit, so batches grow with the load
 * and the PUTs follow the store's pace); `lingerMs` after its first line;
 * BATCH_MAX_LINES. The linger alone made a job whose handling ended early wait it out, which
 * slowed every S3 job (docs/performance-history.md). Not
 * util/group-commit.ts, which runs one task for every caller: here each batch is its own PUT,
 * by hour, and a batch also ends by its linger and its size.
 */
export function batchWriter(put: FileArea['put'], lingerMs: number) {
  const writer = writerName();
  let sequence = 0;
  let putting = 0;
  const open = new Map<string, OpenBatch>();
  const closeWaited = () => {
    for (const batch of open.values()) if (batch.waited) batch.close();
  };
  const start = (hour: string): OpenBatch => {
    let due = () => {};
    const closed = new Promise<void>((resolve) => (due = resolve));
    const timer = setTimeout(due, lingerMs);
    const lines: string[] = [];
    const buckets = Buffer.alloc(32);
    const batch: OpenBatch = {
      lines,
      buckets,
      waited: false,
      close() {
        clearTimeout(timer);
        due();
      },
      written: closed.then(async () => {
        if (open.get(hour) === batch) open.delete(hour);
        sequence++;
        putting++;
        try {
          await put(
            batchFileName(hour, writer, sequence, buckets),
            Buffer.from(lines.join(''), 'utf8'),
          );
        } finally {
          putting--;
          closeWaited();
        }
      }),
    };
    open.set(hour, batch);
    return batch;
  };
  /** `hour`: its folder; `bucket`: its line's id's (folders.ts); `line`: an entry and `\n`. */
  return (hour: string, bucket: number, line: string): BatchedLine => {
    const batch = open.get(hour) ?? start(hour);
    batch.lines.push(line);
    addBucket(batch.buckets, bucket);
    if (batch.lines.length >= BATCH_MAX_LINES) {
      open.delete(hour);
      batch.close();
    }
    // A rejection with no one waiting yet must not end the process; `written` rethrows it.
    batch.written.catch(() => undefined);
    return {
      written() {
        batch.waited = true;
        if (putting === 0) batch.close();
        return batch.written;
      },
    };
  };
}
