import type { ArchiveArea } from '../storage/audio-store.js';
import { DAY_MS, HOUR_MS } from './hour-folder.js';
import { listDays, listHours } from './list-hours.js';

/** Removes the hour folders that end at or before `cutoff`; returns them. */
async function removeHoursBefore(area: ArchiveArea, cutoff: number): Promise<string[]> {
  const removed: string[] = [];
  for (const folder of await listHours(area, -Infinity, cutoff)) {
    const [day = '', hour = ''] = folder.split('/');
    if (Date.parse(`${day}T${hour}:00:00Z`) + HOUR_MS > cutoff) continue;
    await area.remove(folder);
    removed.push(folder);
  }
  return removed;
}

async function isEmpty(listing: AsyncIterable<string>): Promise<boolean> {
  // Returning from the loop closes the listing (a directory handle, a paged request).
  for await (const _name of listing) return false;
  return true;
}

/** A day folder left empty goes too (another sweeper may be removing it as well). */
async function removeEmptyDaysBefore(area: ArchiveArea, cutoff: number): Promise<void> {
  for (const day of await listDays(area)) {
    if (Date.parse(`${day}T00:00:00Z`) + DAY_MS > cutoff) continue;
    if (await isEmpty(area.list(`${day}/`))) await area.remove(`${day}/`);
  }
}

/** Archive['sweep']: removes the hours wholly older than `retentionHours`, and emptied days. */
export async function sweepArchive(
  area: ArchiveArea,
  retentionHours: number,
  now: Date,
): Promise<string[]> {
  const cutoff = now.getTime() - retentionHours * HOUR_MS;
  const removed = await removeHoursBefore(area, cutoff);
  await removeEmptyDaysBefore(area, cutoff);
  return removed;
}
