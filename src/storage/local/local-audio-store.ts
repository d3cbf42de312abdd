import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { ARCHIVE_FOLDER, type AudioMetadata, type AudioStore } from '../audio-store.js';
import { checkWritableDir } from './check-writable-dir.js';
import { createLocalArchiveArea } from './local-archive-area.js';
import { createLocalWrites } from './local-writes.js';
import { removeAbandonedTemps } from './remove-abandoned-temps.js';
import { storageError } from '../storage-errors.js';

// The tests of the batched write take it from here, where it has always been.
export { unwritten, writeBatched } from './write-batched.js';

/** Audio on the local filesystem (a volume in Docker). Names come from fileStem, never from input. */
export async function createLocalAudioStore(
  dir: string,
  /** `writable: false` for a reader (the CLI): AUDIO_DIR is then neither created nor probed. */
  { writable = true }: { readonly writable?: boolean } = {},
): Promise<AudioStore> {
  if (writable) await checkWritableDir(dir);
  return {
    archive: createLocalArchiveArea(join(dir, ARCHIVE_FOLDER)),
    ...createLocalWrites(dir),

    read(name) {
      return createReadStream(join(dir, name));
    },

    async readMetadata(stem) {
      try {
        return JSON.parse(await readFile(join(dir, `${stem}.json`), 'utf8')) as AudioMetadata;
      } catch (error: unknown) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw storageError(error, `reading ${stem}.json`, dir);
      }
    },

    async holds(name, bytes, sha256) {
      const path = join(dir, name);
      const info = await stat(path).catch(() => undefined);
      if (info?.size !== bytes) return false;
      const hash = createHash('sha256');
      await pipeline(createReadStream(path), hash);
      return hash.digest('hex') === sha256;
    },

    removeStaleTemps: () => removeAbandonedTemps(dir),
  };
}
