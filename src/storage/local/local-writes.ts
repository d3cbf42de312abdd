import { link, open, rename, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { setImmediate } from 'node:timers/promises';
import type { AudioStore } from '../audio-store.js';
import { inSpan } from '../../telemetry/tracing.js';
import { StorageError, storageError } from '../storage-errors.js';
import { groupCommit } from '../../util/group-commit.js';
import { tempName } from '../temp-name.js';
import { writeBatched } from './write-batched.js';

async function fsyncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * The local store's two write paths into `dir`: a temp file, its fsync, a rename onto the name
 * and the directory's fsync, which the writes of one store share.
 */
export function createLocalWrites(
  dir: string,
): Required<Pick<AudioStore, 'write' | 'writeWithMetadata'>> {
  // Up to 2 × WORKER_CONCURRENCY renames at once share a handful of directory fsyncs.
  const syncDirectory = groupCommit(() => fsyncDirectory(dir));
  // Per item, the pair renames of this store's runs, one after another (renamePair, below).
  const renameTurns = new Map<string, Promise<void>>();
  return {
    async write(name, source, options) {
      const fail = (error: unknown) => storageError(error, `writing ${name}`, dir);
      const temp = await openTempFile(dir, source, fail);
      try {
        await temp.sync();
        await rename(temp.path, join(dir, name)).catch((error: unknown) => {
          throw fail(error);
        });
      } catch (error: unknown) {
        await temp.discard();
        throw error;
      }
      // The rename is durable only once the directory entry is. The audio's entry becomes
      // durable with its metadata's, written next in the same directory: one directory fsync
      // per item, not two: directory fsyncs are a large part of a job's time. Should a crash keep
      // the metadata's entry but not the audio's, the job runs again (not yet completed) and
      // finds no audio matching the metadata, so it downloads again.
      if (options?.entryDurableLater === true) return;
      await inSpan('directory.fsync', {}, syncDirectory).catch((error: unknown) => {
        throw fail(error);
      });
    },

    // The two writes of `write`, with the metadata's temp file written and fsynced while the
    // audio's fsync runs: the two fsyncs overlap instead of following each other, and often
    // share the filesystem's journal commit. Both temps are whole and durable before either is
    // renamed; the renames keep their order (audio, then metadata) and leave a pair of one run
    // (renamePair, below), and one directory fsync makes both durable, as with the two writes.
    async writeWithMetadata(audio, metadata) {
      const failAudio = (error: unknown) => storageError(error, `writing ${audio.name}`, dir);
      const failMetadata = (error: unknown) => storageError(error, `writing ${metadata.name}`, dir);
      const audioTemp = await openTempFile(dir, audio.source, failAudio);
      let metadataTemp: TempFile | undefined;
      try {
        const settled = await inSpan('files.sync', {}, () =>
          Promise.allSettled([
            audioTemp.sync(),
            (async () => {
              metadataTemp = await openTempFile(dir, [metadata.bytes()], failMetadata);
              await metadataTemp.sync();
            })(),
          ]),
        );
        for (const outcome of settled) if (outcome.status === 'rejected') throw outcome.reason;
        await renamePair(
          dir,
          { temp: audioTemp.path, name: audio.name, fail: failAudio },
          { temp: metadataTemp?.path ?? '', name: metadata.name, fail: failMetadata },
          renameTurns,
        );
      } catch (error: unknown) {
        // A temp already renamed is gone from its path: discarding it then removes nothing.
        await audioTemp.discard();
        await metadataTemp?.discard();
        throw error;
      }
      await inSpan('directory.fsync', {}, syncDirectory).catch((error: unknown) => {
        throw failMetadata(error);
      });
    },
  };
}

/** A temp file holding a whole source, not yet synced or renamed. */
export interface TempFile {
  readonly path: string;
  /** fsyncs and closes it. */
  sync(): Promise<void>;
  /** Closes and removes it, whatever happened before; never throws. */
  discard(): Promise<void>;
}

/**
 * Creates `dir`'s temp file (`wx`: exclusive, so two writers never share one) and writes `source`
 * into it through the handle, which stays open for the fsync. A failing source keeps its own
 * error, and the filesystem's become `fail`'s; either way nothing is left behind.
 */
export async function openTempFile(
  dir: string,
  source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  fail: (error: unknown) => Error,
): Promise<TempFile> {
  const path = join(dir, tempName());
  const handle = await open(path, 'wx', 0o644).catch((error: unknown) => {
    throw fail(error);
  });
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await handle.close();
  };
  const temp: TempFile = {
    path,
    async sync() {
      await inSpan('file.fsync', {}, () => handle.sync()).catch((error: unknown) => {
        throw fail(error);
      });
      await close().catch((error: unknown) => {
        throw fail(error);
      });
    },
    async discard() {
      await close().catch(() => undefined);
      await unlink(path).catch(() => undefined);
    },
  };
  try {
    await writeBatched(handle, source, fail);
  } catch (error: unknown) {
    await temp.discard();
    throw error;
  }
  return temp;
}

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
async function renamePair(
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
