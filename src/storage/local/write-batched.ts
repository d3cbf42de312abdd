import type { FileHandle } from 'node:fs/promises';

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

/**
 * Writes the chunks as they come, a batch at a time, while the next batch gathers: disk and
 * network overlap. The chunks themselves are written (a stream's chunks are never reused once
 * read), so nothing is copied or allocated per batch and memory stays flat: at most two batches
 * per download, however large the file. A small file is one writev. The filesystem's errors
 * become `fail`'s; a failing source keeps its own.
 */
export async function writeBatched(
  handle: FileHandle,
  chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  fail: (error: unknown) => Error,
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
