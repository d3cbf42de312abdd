import type { Logger } from 'pino';
import type { AudioStore, Config } from '../index.js';
import { createLocalAudioStore } from '../index.js';

/**
 * An example of src/custom/store.ts: the store every worker writes the audio to, instead of the
 * one the settings choose. Implement AudioStore (src/storage/audio-store.ts) and throw
 * StorageError for storage trouble, so that a job meeting it is retried. Give it `files`
 * (a FileArea, its area for small files: createLocalFileArea, or your own) to keep `replay` working: a store without
 * one archives nothing (docs/replay.md).
 */
export async function createStore(config: Config, logger: Logger): Promise<AudioStore> {
  logger.info({ dir: config.audioDir }, 'audio goes to the example store');
  return createLocalAudioStore(config.audioDir);
}
