import { open, rename, stat, unlink } from 'node:fs/promises';
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
        await temp.close();
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
        if (metadataTemp === undefined) throw failMetadata(new Error('no temp file was made'));
        await renamePair(
          dir,
          { temp: audioTemp, name: audio.name, fail: failAudio },
          { temp: metadataTemp, name: metadata.name, fail: failMetadata },
          renameTurns,
        );
        await Promise.all([audioTemp.close(), metadataTemp.close()]).catch((error: unknown) => {
          throw failMetadata(error);
        });
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

/** A temp file holding a whole source, not yet renamed; its handle stays open until closed. */
export interface TempFile {
  readonly path: string;
  /** fsyncs it. */
  sync(): Promise<void>;
  /** Its device and inode, which its name keeps after a rename. */
  identity(): Promise<{ readonly dev: bigint; readonly ino: bigint }>;
  /** Its bytes, read again through its handle: they outlive every name of it. */
  contents(): AsyncIterable<Uint8Array>;
  /** Closes it; its name, if still there, stays. */
  close(): Promise<void>;
  /** Closes and removes it, whatever happened before; never throws. */
  discard(): Promise<void>;
}

/**
 * Creates `dir`'s temp file (`wx+`: exclusive, so two writers never share one) and writes `source`
 * into it through the handle, which stays open for the fsync and for `contents`. A failing source
 * keeps its own error, and the filesystem's become `fail`'s; either way nothing is left behind.
 */
export async function openTempFile(
  dir: string,
  source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  fail: (error: unknown) => Error,
): Promise<TempFile> {
  const path = join(dir, tempName());
  const handle = await open(path, 'wx+', 0o644).catch((error: unknown) => {
    throw fail(error);
  });
  let closed = false;
  const failing = <T>(work: Promise<T>) =>
    work.catch((error: unknown) => {
      throw fail(error);
    });
  const temp: TempFile = {
    path,
    sync: () => failing(inSpan('file.fsync', {}, () => handle.sync())),
    identity: () => failing(handle.stat({ bigint: true })),
    // From the start, whatever the handle's position; the handle is closed by its owner.
    contents: () => handle.createReadStream({ start: 0, autoClose: false }),
    async close() {
      if (closed) return;
      closed = true;
      await failing(handle.close());
    },
    async discard() {
      await temp.close().catch(() => undefined);
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
  readonly temp: TempFile;
  readonly name: string;
  readonly fail: (error: unknown) => Error;
}

/**
 * Renames the audio's temp file and then the metadata's onto their names in `dir`, so that the
 * metadata left under its name describes the audio left under its own, whatever other runs of
 * the item (a replay, a stalled job re-run) rename meanwhile. Two runs' renames interleave: A's
 * audio, B's audio, B's metadata, A's metadata leave A's metadata beside B's audio (seen in
 * runs whose CDN served each other bytes: docs/performance-history.md). Runs of one store take
 * turns per item (`turns`: the renames only, no fsync, so a turn is short). Runs in other
 * processes sharing the directory cannot be waited for without a lock file, which a killed
 * holder would leave behind: after its metadata's rename a run looks, and while its metadata
 * stands beside another run's audio it renames both again, from copies of its two files. The
 * last metadata renamed is always followed by its run's look, so the pair that stays is one run's.
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
  const renamed = (placed: Placed, from: TempFile) =>
    rename(from.path, join(dir, placed.name)).catch((error: unknown) => {
      throw placed.fail(error);
    });
  const same = (path: string, file: { dev: bigint; ino: bigint }) =>
    stat(path, { bigint: true }).then(
      (found) => found.ino === file.ino && found.dev === file.dev,
      () => false,
    );
  // Renamed from: the temps first, then copies of them made for a repair. The repair copies
  // rather than keeping hard links on every item: two links and two unlinks per item cost more
  // than a rare copy, and a filesystem without hard links (some network shares) repairs too.
  // The copies are read through the temps' handles, open until the caller closes them, so a
  // temp whose name another run replaced is still there to copy.
  let from = { audio: audio.temp, metadata: metadata.temp };
  const copies: TempFile[] = [];
  const copy = async (placed: Placed) => {
    const written = await openTempFile(dir, placed.temp.contents(), placed.fail);
    copies.push(written);
    await written.sync();
    return written;
  };
  try {
    for (let attempt = 1; ; attempt++) {
      const [audioFile, metadataFile] = await Promise.all([
        from.audio.identity(),
        from.metadata.identity(),
      ]);
      await renamed(audio, from.audio);
      await renamed(metadata, from.metadata);
      // Another run's metadata renamed after this one's: that run looks for itself.
      if (!(await same(join(dir, metadata.name), metadataFile))) return;
      if (await same(join(dir, audio.name), audioFile)) return;
      if (attempt === ATTEMPTS)
        throw new StorageError(
          `another run of the item replaced ${audio.name} while ${metadata.name} was written`,
        );
      // Runs that repair in step undo each other's repair (three stores on one directory, in
      // one event loop, once reached 32): a random number of turns of the loop breaks the step.
      for (let turns = Math.random() * attempt * 2; turns > 0; turns--) await setImmediate();
      const [audioCopy, metadataCopy] = await Promise.all([copy(audio), copy(metadata)]);
      from = { audio: audioCopy, metadata: metadataCopy };
    }
  } catch (error: unknown) {
    throw error instanceof StorageError ? error : metadata.fail(error);
  } finally {
    // The copies renamed onto their names are gone from their paths: this only closes them.
    await Promise.all(copies.map((written) => written.discard()));
  }
}
