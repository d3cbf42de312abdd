import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import {
  mkdir,
  open,
  readdir,
  readFile,
  rename,
  stat,
  unlink,
  type FileHandle,
} from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { ARCHIVE_FOLDER, type AudioMetadata, type AudioStore } from './audio-store.js';
import { inSpan } from '../telemetry/tracing.js';
import { storageError } from './storage-errors.js';
import { createLocalArchiveArea } from './local-archive-area.js';
import { groupCommit } from '../util/group-commit.js';
import { isAbandonedTemp, tempName } from './temp-name.js';
import { renamePair } from './rename-pair.js';

async function fsyncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Chunks gathered before one writev: many TLS records become one syscall. Bounded in bytes and in
 * count (IOV_MAX), so a server sending tiny records cannot pile up chunk objects.
 */
const BATCH_BYTES = 1 << 20;
const BATCH_CHUNKS = 1024;
/** Written bytes after which the data is flushed in the background (fdatasync). */
const FLUSH_BYTES = 8 << 20;

/**
 * What is left of `buffers` once the first `written` bytes are written: writev, like write, may
 * write less than asked.
 */
export function unwritten(buffers: readonly Uint8Array[], written: number): Uint8Array[] {
  let skip = written;
  let first = 0;
  while (first < buffers.length && skip >= (buffers[first]?.length ?? 0)) {
    skip -= buffers[first]?.length ?? 0;
    first++;
  }
  const rest = buffers.slice(first);
  const head = rest[0];
  if (head !== undefined && skip > 0) rest[0] = head.subarray(skip);
  return rest;
}

async function writevAll(handle: FileHandle, buffers: Uint8Array[]): Promise<void> {
  let pending = buffers;
  while (pending.length > 0) {
    const { bytesWritten } = await handle.writev(pending);
    pending = unwritten(pending, bytesWritten);
  }
}

type Wrap = (error: unknown) => Error;

/**
 * Writes the chunks as they come, a batch at a time, while the next batch gathers: disk and
 * network overlap. The chunks themselves are written (a stream's chunks are never reused once
 * read), so nothing is copied or allocated per batch and memory stays flat: at most two batches
 * per download, however large the file. A small file is one writev.
 */
export async function writeBatched(
  handle: FileHandle,
  chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  fail: Wrap,
): Promise<void> {
  const write = (batch: Uint8Array[]) =>
    writevAll(handle, batch).catch((error: unknown) => {
      throw fail(error);
    });
  let batch: Uint8Array[] = [];
  let batched = 0;
  let inFlight: Promise<void> = Promise.resolve();
  // Pages written so far go to disk while the download goes on, so the fsync that ends the
  // write has little left to do: a 50 MB file's fsync no longer follows its last byte in full.
  let unflushed = 0;
  let flushing: Promise<void> | undefined;
  const written = (bytes: number) => {
    unflushed += bytes;
    if (unflushed < FLUSH_BYTES || flushing !== undefined) return;
    unflushed = 0;
    flushing = handle.datasync().then(
      () => {
        flushing = undefined;
      },
      (error: unknown) => {
        flushing = Promise.reject(fail(error));
        flushing.catch(() => undefined);
      },
    );
  };
  try {
    for await (const chunk of chunks) {
      if (chunk.length === 0) continue;
      batch.push(chunk);
      batched += chunk.length;
      if (batched >= BATCH_BYTES || batch.length >= BATCH_CHUNKS) {
        // The batch before must be written before another one is started.
        await inFlight;
        const bytes = batched;
        inFlight = write(batch).then(() => {
          written(bytes);
        });
        // Handled now, rethrown where awaited: a write failing while the next chunk is awaited
        // would otherwise be an unhandled rejection, which ends the process.
        inFlight.catch(() => undefined);
        batch = [];
        batched = 0;
      }
    }
  } catch (error: unknown) {
    // The source failed: let the write in flight settle so its own failure is not left unhandled.
    await inFlight.catch(() => undefined);
    await flushing?.catch(() => undefined);
    throw error;
  }
  await inFlight;
  if (batch.length > 0) await write(batch);
  await flushing;
}

/** A temp file holding a whole source, not yet synced or renamed. */
interface Temp {
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
async function openTemp(
  dir: string,
  source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  fail: Wrap,
): Promise<Temp> {
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
  const temp: Temp = {
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
 * Creates AUDIO_DIR and proves it writable with a real file (as root, permission bits say
 * nothing; a read-only mount or a full disk only shows on a write), so a worker that cannot
 * store audio refuses to start instead of failing every job.
 */
async function checkWritable(dir: string): Promise<void> {
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

/** Audio on the local filesystem (a volume in Docker). Names come from fileStem, never from input. */
export async function createLocalAudioStore(
  dir: string,
  /** `writable: false` for a reader (the CLI): AUDIO_DIR is then neither created nor probed. */
  { writable = true }: { readonly writable?: boolean } = {},
): Promise<AudioStore> {
  if (writable) await checkWritable(dir);
  // Up to 2 × WORKER_CONCURRENCY renames at once share a handful of directory fsyncs.
  const syncDirectory = groupCommit(() => fsyncDirectory(dir));
  // Per item, the pair renames of this store's runs, one after another (storage/rename-pair.ts).
  const renameTurns = new Map<string, Promise<void>>();
  return {
    archive: createLocalArchiveArea(join(dir, ARCHIVE_FOLDER)),

    async write(name, source, options) {
      const fail = (error: unknown) => storageError(error, `writing ${name}`, dir);
      const temp = await openTemp(dir, source, fail);
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
      // per item, not two (the bench's trace had 28 % of a job in them). Should a crash keep
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
    // (storage/rename-pair.ts), and one directory fsync makes both durable, as with the two writes.
    async writeWithMetadata(audio, metadata) {
      const failAudio = (error: unknown) => storageError(error, `writing ${audio.name}`, dir);
      const failMetadata = (error: unknown) => storageError(error, `writing ${metadata.name}`, dir);
      const audioTemp = await openTemp(dir, audio.source, failAudio);
      let metadataTemp: Temp | undefined;
      try {
        const settled = await inSpan('files.sync', {}, () =>
          Promise.allSettled([
            audioTemp.sync(),
            (async () => {
              metadataTemp = await openTemp(dir, [metadata.bytes()], failMetadata);
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

    async removeStaleTemps() {
      const removed: string[] = [];
      for (const name of await readdir(dir)) {
        if (!(await isAbandonedTemp(name, join(dir, name)))) continue;
        await unlink(join(dir, name)).catch(() => undefined);
        removed.push(name);
      }
      return removed;
    },
  };
}
