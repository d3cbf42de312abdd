import { readdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { isAbandonedTemp } from '../temp-name.js';

/**
 * AudioStore.removeStaleTemps of the local store: removes the temp files in `dir` whose writers
 * will never finish them (storage/temp-name.ts); returns their names.
 */
export async function removeAbandonedTemps(dir: string): Promise<string[]> {
  const removed: string[] = [];
  for (const name of await readdir(dir)) {
    if (!(await isAbandonedTemp(name, join(dir, name)))) continue;
    await unlink(join(dir, name)).catch(() => undefined);
    removed.push(name);
  }
  return removed;
}
