import { open, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { AudioStore } from '../audio-store.js';
import { inSpan } from '../../telemetry/tracing.js';
import { storageError } from '../storage-errors.js';
import { groupCommit } from '../../util/group-commit.js';
import { renamePair } from './rename-pair.js';
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
  // Per item, the pair renames of this store's runs, one after another (storage/local/rename-pair.ts).
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
    // (storage/local/rename-pair.ts), and one directory fsync makes both durable, as with the two writes.
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
