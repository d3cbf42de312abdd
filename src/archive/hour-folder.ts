export const HOUR_MS = 3600 * 1000;
export const DAY_MS = 24 * HOUR_MS;

/** The hour folder a time falls in: `2026-11-24T09:15:02.123Z` → `2026-11-24/09/`. */
export function hourFolder(time: string): string {
  const iso = new Date(time).toISOString();
  return `${iso.slice(0, 10)}/${iso.slice(11, 13)}/`;
}
