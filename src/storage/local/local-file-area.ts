import { appendFile } from 'node:fs';
import { mkdir, opendir, readdir, readFile, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import type { FileArea } from '../audio-store.js';
import { archiveSegments } from '../archive-path.js';
import { storageError } from '../storage-errors.js';
import { writeAtomically } from '../write-atomically.js';

/**
 * fs's callback form: fs/promises' appendFile opens a FileHandle and settles a promise for each
 * of its open, write and close, and the archive appends once per delivery.
 */
const appendToFile = promisify(appendFile);

/**
 * The store's small-files area as files under `root` (`<AUDIO_DIR>/.archive`). A file put appears
 * whole (temp file in the same folder, then rename); an append goes to the end of a file that one
 * writer owns (archive/archive.ts). Neither is fsynced: an archive entry is a copy kept beside the queue, and a
 * host crash may lose the last seconds of them, never a delivery (docs/replay.md).
 */
export function createLocalFileArea(root: string): FileArea {
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
    async append(path, body) {
      const target = file(path);
      // The file exists but for the first append to it in its hour: its folder is made then.
      await appendToFile(target, body)
        .catch(async (error: unknown) => {
          if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
          await mkdir(dirname(target), { recursive: true });
          await appendToFile(target, body);
        })
        .catch(fail(`archiving to ${path}`));
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

/** Folders read at once in a deep listing: one readdir each, a few dozen in flight. */
const FOLDERS_IN_FLIGHT = 32;

/**
 * `dir`'s entries, streamed: opendir reads a few dozen at a time, so an hour of millions is never
 * held. Deep: the files of the folders in it (an hour's folders, each small: its buckets' of
 * segments, a file per writer, and the item folders of entry files that versions before the
 * segments wrote; read with one readdir apiece, FOLDERS_IN_FLIGHT at once, several times faster
 * than an opendir walk of each), folders not listed
 * themselves. Two levels are all an hour has (archive/archive.ts).
 */
async function* listFolder(
  dir: string,
  deep: boolean,
  fail: (error: unknown) => never,
): AsyncGenerator<string> {
  const handle = await opendir(dir).catch((error: unknown) => {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    return fail(error);
  });
  if (handle === undefined) return;
  const inFolders = async function* (folders: string[]) {
    const listed = await Promise.all(
      folders.map((folder) =>
        readdir(join(dir, folder)).then(
          (names) =>
            names.filter((name) => !name.startsWith('.')).map((name) => `${folder}/${name}`),
          // Swept meanwhile: nothing there any more.
          (error: unknown) =>
            (error as NodeJS.ErrnoException).code === 'ENOENT' ? [] : fail(error),
        ),
      ),
    );
    for (const names of listed) yield* names;
  };
  let folders: string[] = [];
  // The for-await closes the handle, on a break or a throw too.
  for await (const entry of handle) {
    if (entry.name.startsWith('.')) continue;
    if (!entry.isDirectory()) yield entry.name;
    else if (!deep) yield `${entry.name}/`;
    else if (folders.push(entry.name) >= FOLDERS_IN_FLIGHT) {
      yield* inFolders(folders);
      folders = [];
    }
  }
  yield* inFolders(folders);
}
