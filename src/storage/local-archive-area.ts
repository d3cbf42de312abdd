import { readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { ArchiveArea } from './audio-store.js';
import { archiveSegments } from './archive-path.js';
import { storageError } from './storage-errors.js';
import { writeAtomically } from './write-atomically.js';

/**
 * The archive as files under `root` (`<AUDIO_DIR>/.archive`). A file appears whole (temp file
 * in the same folder, then rename) but is not fsynced: an entry is a record kept beside the
 * queue, and a host crash may lose the last seconds of them, never a delivery (docs/replay.md).
 */
export function createLocalArchiveArea(root: string): ArchiveArea {
  const file = (path: string) => join(root, ...archiveSegments(path, 'file'));
  const folder = (path: string) => join(root, ...archiveSegments(path, 'folder'));
  const fail = (what: string) => (error: unknown) => {
    throw storageError(error, what, root);
  };
  return {
    async put(path, body) {
      // The temp's dot in front: list() never shows it, and the sweep removes it with its hour.
      await writeAtomically(file(path), body).catch(fail(`archiving ${path}`));
    },
    async get(path) {
      return readFile(file(path)).catch((error: unknown) => {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        return fail(`reading the archive's ${path}`)(error);
      });
    },
    async list(path) {
      const entries = await readdir(folder(path), { withFileTypes: true }).catch(
        (error: unknown) => {
          if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
          return fail(`listing the archive's ${path || 'top folder'}`)(error);
        },
      );
      return entries
        .filter((entry) => !entry.name.startsWith('.'))
        .map((entry) => (entry.isDirectory() ? `${entry.name}/` : entry.name));
    },
    async remove(path) {
      await rm(folder(path), { recursive: true, force: true }).catch(
        fail(`removing the archive's ${path}`),
      );
    },
  };
}
