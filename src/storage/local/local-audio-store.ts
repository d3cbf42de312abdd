import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile, stat, mkdir, open, unlink, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { ARCHIVE_FOLDER, type AudioMetadata, type AudioStore } from '../audio-store.js';
import { createLocalFileArea } from './local-file-area.js';
import { createLocalWrites } from './local-writes.js';
import { storageError } from '../storage-errors.js';
import { tempName, isAbandonedTemp } from '../temp-name.js';

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
    files: createLocalFileArea(join(dir, ARCHIVE_FOLDER)),
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

/**
 * The local store's start-up check: creates AUDIO_DIR and proves it writable with a real file
 * (as root, permission bits say nothing; a read-only mount or a full disk only shows on a
 * write), so a worker that cannot store audio refuses to start instead of failing every job.
 */
export async function checkWritableDir(dir: string): Promise<void> {
  const probe = join(dir, tempName());
  try {
    await mkdir(dir, { recursive: true });
    const handle = await open(probe, 'wx', 0o644);
    try {
      await handle.write(Buffer.from('probe'));
      await handle.sync();
    } finally {
      await handle.close();
    }
    await unlink(probe);
  } catch (error: unknown) {
    await unlink(probe).catch(() => undefined);
    throw storageError(error, 'checking it is a writable directory', dir);
  }
}

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
