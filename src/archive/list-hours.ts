import type { FileArea } from '../storage/audio-store.js';
import { DAY_MS, HOUR_MS } from './folders.js';

const DAY_FOLDER = /^(\d{4}-\d{2}-\d{2})\/$/;
const HOUR_FOLDER = /^(\d{2})\/$/;

/** Every name a listing gives, gathered: only for the day and hour folders, a few dozen. */
async function names(listing: AsyncIterable<string>): Promise<string[]> {
  const all: string[] = [];
  for await (const name of listing) all.push(name);
  return all;
}

/** The archive's days (`2026-11-24`, each a folder), oldest first. */
export async function listDays(area: FileArea): Promise<string[]> {
  return (await names(area.list(''))).flatMap((name) => DAY_FOLDER.exec(name)?.[1] ?? []).sort();
}

/** The hour folders (`2026-11-24/09/`) that may hold entries of [since, until], oldest first. */
export async function listHours(area: FileArea, since: number, until: number): Promise<string[]> {
  const hours: string[] = [];
  for (const day of await listDays(area)) {
    const dayStart = Date.parse(`${day}T00:00:00Z`);
    if (dayStart + DAY_MS <= since || dayStart > until) continue;
    const inDay = (await names(area.list(`${day}/`)))
      .flatMap((name) => HOUR_FOLDER.exec(name)?.[1] ?? [])
      .sort();
    for (const hour of inDay) {
      const hourStart = dayStart + Number(hour) * HOUR_MS;
      if (hourStart + HOUR_MS <= since || hourStart > until) continue;
      hours.push(`${day}/${hour}/`);
    }
  }
  return hours;
}
