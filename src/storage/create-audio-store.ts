import type { Config } from '../config/config.js';
import type { AudioStore } from './audio-store.js';
import { createLocalAudioStore } from './local-audio-store.js';
import { createS3AudioStore } from './s3-audio-store.js';

/**
 * The store AUDIO_STORE chooses, checked before the first job: AUDIO_DIR writable with a real
 * file, or the bucket reachable and usable (HeadBucket). Either failure is a StorageError whose
 * message names the settings to fix.
 */
export async function createAudioStore(config: Config): Promise<AudioStore> {
  if (config.audioStore === 'local') return createLocalAudioStore(config.audioDir);
  const store = createS3AudioStore(config);
  await store.checkBucket();
  return store;
}
