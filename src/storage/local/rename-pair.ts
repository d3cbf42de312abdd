import { link, rename, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { setImmediate } from 'node:timers/promises';
import { StorageError } from '../storage-errors.js';
import { tempName } from '../temp-name.js';

/**
 * Renames of a pair before the job's retry takes over: each one past the first needs another
 * run's renames between two of this run's, which the random turns below make rare
 * (docs/performance-history.md, "Figures behind the code").
 */
const ATTEMPTS = 32;

/** A written, synced temp file, the name it takes, and how a filesystem error of it is told. */
interface Placed {
  readonly temp: string;
  readonly name: string;
  readonly fail: (error: unknown) => Error;
}

/**
 * Renames the audio's temp file and then the metadata's onto their names in `dir`, so that the
 * metadata left under its name describes the audio left under its own, whatever other runs of
 * the item (a replay, a stalled job re-run) rename meanwhile. Two runs' renames interleave: A's
 * audio, B's audio, B's metadata, A's metadata leave A's metadata beside B's audio (seen in
 * runs whose CDN served each other bytes: docs/performance-history.md). Runs of one store take turns per item
 * (`turns`: the renames only, no fsync, so a turn is short). Runs in other processes sharing the
 * directory cannot be waited for without a lock file, which a killed holder would leave behind:
 * after its metadata's rename a run looks, and while its metadata stands beside another run's
 * audio it renames both again, from links kept for that. The last metadata renamed is always
 * followed by its run's look, so the pair that stays is one run's.
 */
export async function renamePair(
  dir: string,
  audio: Placed,
  metadata: Placed,
  turns: Map<string, Promise<void>>,
): Promise<void> {
  const before = turns.get(metadata.name) ?? Promise.resolve();
  const mine = before.then(() => renameChecked(dir, audio, metadata));
  const done = mine.then(
    () => undefined,
    () => undefined,
  );
  turns.set(metadata.name, done);
  try {
    await mine;
  } finally {
    if (turns.get(metadata.name) === done) turns.delete(metadata.name);
  }
}

async function renameChecked(dir: string, audio: Placed, metadata: Placed): Promise<void> {
  const identity = (placed: Placed) =>
    stat(placed.temp, { bigint: true }).catch((error: unknown) => {
      throw placed.fail(error);
    });
  const [audioFile, metadataFile] = await Promise.all([identity(audio), identity(metadata)]);
  const renamed = (placed: Placed, from: string) =>
    rename(from, join(dir, placed.name)).catch((error: unknown) => {
      throw placed.fail(error);
    });
  // Temp names: a process killed before it removes them leaves them to removeStaleTemps.
  const kept = { audio: join(dir, tempName()), metadata: join(dir, tempName()) };
  // A filesystem without hard links (some network shares) keeps none: a run that finds its
  // metadata beside another's audio then fails, and its retry downloads the item again.
  const keeping = await Promise.all([
    link(audio.temp, kept.audio),
    link(metadata.temp, kept.metadata),
  ]).then(
    () => true,
    () => false,
  );
  const same = (path: string, file: typeof audioFile | undefined) =>
    stat(path, { bigint: true }).then(
      (found) => found.ino === file?.ino && found.dev === file.dev,
      () => false,
    );
  // The names renamed from: the temps first, then new links to the kept files. A rename onto a
  // name that is already the same file does nothing and leaves its source: removed at the end.
  let from = { audio: audio.temp, metadata: metadata.temp };
  const made: string[] = [];
  try {
    for (let attempt = 1; ; attempt++) {
      await renamed(audio, from.audio);
      await renamed(metadata, from.metadata);
      // Another run's metadata renamed after this one's: that run looks for itself.
      if (!(await same(join(dir, metadata.name), metadataFile))) return;
      if (await same(join(dir, audio.name), audioFile)) return;
      if (!keeping || attempt === ATTEMPTS)
        throw new StorageError(
          `another run of the item replaced ${audio.name} while ${metadata.name} was written`,
        );
      // Runs that repair in step undo each other's repair (three stores on one directory, in
      // one event loop, once reached 32): a random number of turns of the loop breaks the step.
      for (let turns = Math.random() * attempt * 2; turns > 0; turns--) await setImmediate();
      from = { audio: join(dir, tempName()), metadata: join(dir, tempName()) };
      made.push(from.audio, from.metadata);
      await link(kept.audio, from.audio);
      await link(kept.metadata, from.metadata);
    }
  } catch (error: unknown) {
    throw error instanceof StorageError ? error : metadata.fail(error);
  } finally {
    const left = keeping ? [kept.audio, kept.metadata, ...made] : made;
    await Promise.all(left.map((path) => unlink(path).catch(() => undefined)));
  }
}
