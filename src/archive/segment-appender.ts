import type { ArchiveArea } from '../storage/audio-store.js';
import { groupCommit } from '../util/group-commit.js';
import { segmentFileName, writerName } from './file-kind.js';

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
export function segmentAppender(append: NonNullable<ArchiveArea['append']>) {
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
