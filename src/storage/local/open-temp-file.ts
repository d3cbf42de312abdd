import { open, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { inSpan } from '../../telemetry/tracing.js';
import { tempName } from '../temp-name.js';
import { writeBatched } from './write-batched.js';

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
