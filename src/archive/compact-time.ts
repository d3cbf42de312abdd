/** `2026-11-24T09:15:02.123Z` → `20261124T091502123Z`: the time in the archive's file names. */
export function compactTime(date: Date): string {
  return date.toISOString().replace(/[-:.]/g, '');
}

/** `20261124T091502123Z` → its epoch milliseconds. */
export function fromCompactTime(compact: string): number {
  const [, y, mo, d, h, mi, s, ms] =
    /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(\d{3})Z$/.exec(compact) ?? [];
  return Date.parse(`${y}-${mo}-${d}T${h}:${mi}:${s}.${ms}Z`);
}
