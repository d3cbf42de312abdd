import { z } from 'zod';
import type { ArchivedDelivery } from './archived-delivery.js';

/** A file or line the archive holds that is not a readable entry: reported, never replayed. */
export interface UnreadableEntry {
  readonly path: string;
  readonly reason: string;
}

/** What reading one entry gives: the entry, or why it is not one. */
export type EntryRead = ArchivedDelivery | { readonly unreadable: UnreadableEntry };

const entrySchema = z.object({
  event: z.string(),
  id: z.string(),
  received_at: z.iso.datetime(),
  job_id: z.string(),
  delivery: z.looseObject({
    event: z.string(),
    data: z.looseObject({ id: z.string() }),
  }),
});

/** One entry's text, checked; `path` names it in the report if it is unreadable. */
export function parseEntry(path: string, text: string): EntryRead {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error: unknown) {
    return { unreadable: { path, reason: String(error) } };
  }
  const entry = entrySchema.safeParse(parsed);
  if (!entry.success) return { unreadable: { path, reason: entry.error.issues[0]?.message ?? '' } };
  return entry.data;
}

/**
 * A segment's or a batch's entries, one per line, each named `<path>:<line>`. A last line without
 * its newline is being appended as it is read, or was when its writer stopped (a crash, a full
 * disk): reported, never replayed. (A batch is written whole, so never has one.)
 */
export function parseLines(path: string, bytes: Uint8Array): EntryRead[] {
  const lines = Buffer.from(bytes).toString('utf8').split('\n');
  const last = lines.pop() ?? '';
  const entries = lines.map((line, at) => parseEntry(`${path}:${at + 1}`, line));
  if (last !== '')
    entries.push({
      unreadable: {
        path: `${path}:${lines.length + 1}`,
        reason: 'an unfinished line (being appended as it was read, or its writer stopped then)',
      },
    });
  return entries;
}
