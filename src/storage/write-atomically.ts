import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { tempName } from './temp-name.js';

/**
 * Writes a small file whole or not at all: a temp file beside it (one name scheme for every
 * area, storage/temp-name.ts), then a rename, which replaces atomically. Not fsynced: for what
 * can be made again or is kept beside the queue (the files area's archive entries and cached
 * bodies, the CLI's files); the audio store syncs its own.
 */
export async function writeAtomically(path: string, bytes: Uint8Array): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const temp = join(dirname(path), tempName());
  try {
    await writeFile(temp, bytes, { flag: 'wx' });
    await rename(temp, path);
  } catch (error: unknown) {
    await rm(temp, { force: true }).catch(() => undefined);
    throw error;
  }
}
