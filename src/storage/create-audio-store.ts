import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { AudioStore } from './audio-store.js';
import { createLocalAudioStore } from './local-audio-store.js';
import { createS3AudioStore } from './s3-audio-store.js';

/** src/custom/store.ts's `createStore`. */
export type CreateStore = (config: Config, logger: Logger) => Promise<AudioStore>;

export interface OpenStoreOptions {
  /** src/custom/store.ts's, which wins over AUDIO_STORE when there. @defaultValue none */
  readonly custom?: CreateStore | undefined;
  /** Given to `custom`. @defaultValue none needed without `custom` */
  readonly logger?: Logger;
  /**
   * Proves AUDIO_DIR writable with a real file (creating it), as a worker must; the CLI only
   * reads. The bucket is checked either way (HeadBucket). @defaultValue true
   */
  readonly writable?: boolean;
}

/**
 * THE way to open the audio store, for the workers and the CLI alike: src/custom/store.ts's
 * when there is one, else the one AUDIO_STORE chooses, checked before use: AUDIO_DIR writable,
 * or the bucket reachable and usable. Either failure is a StorageError whose message names the
 * settings to fix.
 */
export async function createAudioStore(
  config: Config,
  { custom, logger, writable = true }: OpenStoreOptions = {},
): Promise<AudioStore> {
  if (custom !== undefined) {
    if (logger === undefined) throw new Error('a custom store needs a logger');
    return custom(config, logger);
  }
  if (config.audioStore === 'local') return createLocalAudioStore(config.audioDir, { writable });
  const store = createS3AudioStore(config);
  await store.checkBucket();
  return store;
}
