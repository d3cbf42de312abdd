import { randomBytes } from 'node:crypto';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Where rendered audio is kept for the CDN: `<dir>/<batch_id>/<index>.wav`. Names are made here
 * from the batch id and the item's position, never from an item id (which may be anything).
 */
export function createAudioFiles(dir: string, cdnOrigin: string) {
  return {
    newBatchId: () => `batch_${randomBytes(8).toString('hex')}`,
    /** Writes atomically (temp, then rename) and returns the file's CDN URL. */
    async put(batchId: string, index: number, wav: Buffer): Promise<string> {
      const folder = join(dir, batchId);
      await mkdir(folder, { recursive: true });
      const temp = join(folder, `.${index}.${randomBytes(4).toString('hex')}.tmp`);
      await writeFile(temp, wav);
      await rename(temp, join(folder, `${index}.wav`));
      return `${cdnOrigin}/audio/${batchId}/${index}.wav`;
    },
  };
}

export type AudioFiles = ReturnType<typeof createAudioFiles>;
