import { mkdir, open, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { storageError } from '../storage-errors.js';
import { tempName } from '../temp-name.js';

/**
 * The local store's start-up check: creates AUDIO_DIR and proves it writable with a real file
 * (as root, permission bits say nothing; a read-only mount or a full disk only shows on a
 * write), so a worker that cannot store audio refuses to start instead of failing every job.
 */
export async function checkWritableDir(dir: string): Promise<void> {
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
