import type { ArchivedEntry, StoredEntry } from './observations.js';

/** What a store holds after a run (soak-store.ts reads it, the checker judges it). */
export interface StoreContents {
  readonly store: StoredEntry[];
  readonly archive: ArchivedEntry[];
  /** Names that should not be there after a drain: temp files, audio without metadata. */
  readonly strays: string[];
  /** Archive lines or files that are not an entry (a torn last line, say). */
  readonly unreadableArchive: number;
}

/**
 * One archive entry's `event` and `id` (docs/replay.md: `{event, id, received_at, job_id,
 * delivery}`), or undefined when the text is not one.
 */
export function archiveEntryOf(text: string): ArchivedEntry | undefined {
  try {
    const entry = JSON.parse(text) as { event?: unknown; id?: unknown };
    return typeof entry.event === 'string' && typeof entry.id === 'string'
      ? { event: entry.event, id: entry.id }
      : undefined;
  } catch {
    return undefined;
  }
}
