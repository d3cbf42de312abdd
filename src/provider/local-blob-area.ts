import { readdir, readFile, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { BlobArea } from './tts-cache.js';
import { writeAtomically } from '../storage/write-atomically.js';

/** Names the area makes: hex and dashes only, so a name read back can never leave the folder. */
const NAME = /^[0-9a-f-]{1,128}$/;

/**
 * Cached bodies as files in a folder of their own (`<AUDIO_DIR>/.tts-cache/`: no audio file name
 * starts with a dot, so the two never meet). A cache holds nothing that cannot be fetched again,
 * so a write is atomic (temp + rename) but not fsynced.
 */
export function createLocalBlobArea(dir: string): BlobArea {
  const path = (name: string) => {
    if (!NAME.test(name)) throw new Error(`not a cache name: ${JSON.stringify(name)}`);
    return join(dir, name);
  };
  return {
    async put(name, bytes) {
      await writeAtomically(path(name), bytes);
    },
    async get(name) {
      try {
        return await readFile(path(name));
      } catch (error: unknown) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw error;
      }
    },
    async removeOlderThan(ms) {
      const names = await readdir(dir).catch(() => [] as string[]);
      let removed = 0;
      for (const name of names) {
        const file = join(dir, name);
        // Another process may sweep the same folder: a file gone meanwhile is not an error.
        const info = await stat(file).catch(() => undefined);
        if (info !== undefined && Date.now() - info.mtimeMs > ms) {
          await unlink(file).catch(() => undefined);
          removed++;
        }
      }
      return removed;
    },
  };
}
