import { opendir, readFile, rm } from 'node:fs/promises';
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
  const fail =
    (what: string) =>
    (error: unknown): never => {
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
    list(path, options) {
      return listFolder(
        folder(path),
        '',
        options?.deep === true,
        fail(`listing the archive's ${path || 'top folder'}`),
      );
    },
    async remove(path) {
      await rm(folder(path), { recursive: true, force: true }).catch(
        fail(`removing the archive's ${path}`),
      );
    },
  };
}

/**
 * `dir`'s entries under `prefix`, streamed: opendir reads a few dozen at a time, so an hour of
 * millions is never held. Deep: the files of every folder below, folders not listed themselves.
 */
async function* listFolder(
  dir: string,
  prefix: string,
  deep: boolean,
  fail: (error: unknown) => never,
): AsyncGenerator<string> {
  const handle = await opendir(dir).catch((error: unknown) => {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    return fail(error);
  });
  if (handle === undefined) return;
  // The for-await closes the handle, on a break or a throw too.
  for await (const entry of handle) {
    if (entry.name.startsWith('.')) continue;
    if (!entry.isDirectory()) yield `${prefix}${entry.name}`;
    else if (!deep) yield `${prefix}${entry.name}/`;
    else yield* listFolder(join(dir, entry.name), `${prefix}${entry.name}/`, deep, fail);
  }
}
