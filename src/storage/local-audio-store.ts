import { createHash, randomBytes } from 'node:crypto';
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
import { hostname } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { AudioMetadata, AudioStore } from './audio-store.js';
import { storageError } from './storage-errors.js';

/** Temp names say which host and process wrote them, so start-up removes only dead writers' files. */
const HOST_TAG = createHash('sha256').update(hostname()).digest('hex').slice(0, 8);
const TEMP = /^\.partial-([0-9a-f]{8})-(\d+)-[0-9a-f]+$/;
/** A temp file from another host is only presumed dead after this long. */
const FOREIGN_TEMP_MAX_AGE_MS = 24 * 3600 * 1000;

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error: unknown) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function fsyncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Bytes gathered before one write: 64 TLS records' worth of syscalls become one. */
const BATCH_BYTES = 1 << 20;

/** FileHandle.write may write less than asked; loop until the whole range is on its way. */
async function writeAll(handle: FileHandle, buffer: Buffer, length: number): Promise<void> {
  let written = 0;
  while (written < length) {
    const { bytesWritten } = await handle.write(buffer, written, length - written);
    written += bytesWritten;
  }
}

type Wrap = (error: unknown) => Error;

/**
 * Writes through two preallocated 1 MB buffers in turn: one is being written while the other
 * fills, so disk and network overlap, and nothing is allocated per batch, so memory stays flat
 * (two buffers per download) however large the file.
 */
async function writeBatched(
  handle: FileHandle,
  chunks: AsyncIterable<Uint8Array>,
  fail: Wrap,
): Promise<void> {
  const write = (buffer: Buffer, length: number) =>
    writeAll(handle, buffer, length).catch((error: unknown) => {
      throw fail(error);
    });
  let filling = Buffer.allocUnsafe(BATCH_BYTES);
  let spare = Buffer.allocUnsafe(BATCH_BYTES);
  let filled = 0;
  let inFlight: Promise<void> = Promise.resolve();
  try {
    for await (const chunk of chunks) {
      for (let offset = 0; offset < chunk.length;) {
        const n = Math.min(chunk.length - offset, BATCH_BYTES - filled);
        filling.set(chunk.subarray(offset, offset + n), filled);
        filled += n;
        offset += n;
        if (filled === BATCH_BYTES) {
          // The other buffer's write must be done before it is filled again.
          await inFlight;
          inFlight = write(filling, filled);
          [filling, spare] = [spare, filling];
          filled = 0;
        }
      }
    }
  } catch (error: unknown) {
    // The source failed: let the write in flight settle so its own failure is not left unhandled.
    await inFlight.catch(() => undefined);
    throw error;
  }
  await inFlight;
  if (filled > 0) await write(filling, filled);
}

function tempName(): string {
  return `.partial-${HOST_TAG}-${process.pid}-${randomBytes(8).toString('hex')}`;
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
export async function createLocalAudioStore(dir: string): Promise<AudioStore> {
  await checkWritable(dir);
  return {
    async write(name, source) {
      const temp = join(dir, tempName());
      const fail = (error: unknown) => storageError(error, `writing ${name}`, dir);
      // 'wx': exclusive create, so two writers can never share a temp file.
      const handle = await open(temp, 'wx', 0o644).catch((error: unknown) => {
        throw fail(error);
      });
      try {
        // Written through the handle itself, which stays open for the fsync below. A failing
        // source keeps its own error; the filesystem's become StorageErrors.
        await pipeline(source, (chunks: AsyncIterable<Uint8Array>) =>
          writeBatched(handle, chunks, fail),
        );
        await handle.sync().catch((error: unknown) => {
          throw fail(error);
        });
        await handle.close();
        await rename(temp, join(dir, name)).catch((error: unknown) => {
          throw fail(error);
        });
      } catch (error: unknown) {
        await handle.close().catch(() => undefined);
        await unlink(temp).catch(() => undefined);
        throw error;
      }
      // The rename is durable only once the directory entry is.
      await fsyncDirectory(dir).catch((error: unknown) => {
        throw fail(error);
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
        const match = TEMP.exec(name);
        if (!match) continue;
        const [, host, pid] = match;
        const mine = host === HOST_TAG;
        const stale = mine
          ? Number(pid) === process.pid || !isAlive(Number(pid))
          : Date.now() - (await stat(join(dir, name))).mtimeMs > FOREIGN_TEMP_MAX_AGE_MS;
        if (stale) {
          await unlink(join(dir, name)).catch(() => undefined);
          removed.push(name);
        }
      }
      return removed;
    },
  };
}
