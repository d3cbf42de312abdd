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
