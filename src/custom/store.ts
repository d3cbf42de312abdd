import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { AudioStore } from '../storage/audio-store.js';

/**
 * YOUR AUDIO STORE, if the audio should not land in AUDIO_DIR (S3, GCS…): return it from here
 * and main.ts uses it instead of the local filesystem. Undefined keeps the local store.
 * Implement AudioStore (src/storage/audio-store.ts); throw StorageError for storage trouble.
 */
export const createStore: ((config: Config, logger: Logger) => Promise<AudioStore>) | undefined =
  undefined;
