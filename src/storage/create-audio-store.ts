import type { Logger } from 'pino';
import type { StorageSettings } from '../config/storage-settings.js';
import { DeadlineError, withDeadline } from '../util/deadline.js';
import type { AudioStore } from './audio-store.js';
import { createLocalAudioStore } from './local/local-audio-store.js';
import { createS3AudioStore, type S3Settings } from './s3/s3-audio-store.js';
import { StorageError } from './storage-errors.js';

/** What the built-in stores are opened from: AUDIO_STORE, AUDIO_DIR and the S3_* settings. */
export type StoreSettings = Pick<StorageSettings, 'audioStore' | 'audioDir'> & S3Settings;

/**
 * How long opening the store may take, its check included. A hung mount (an NFS server gone, a
 * FUSE daemon stuck) never answers the probe write: without a bound the worker would wait for
 * it for ever without a line. Longer than the bucket check's own 10 s (s3/s3-audio-store.ts), so that one's
 * more precise message wins when it applies.
 */
export const STORE_CHECK_DEADLINE_MS = 15_000;

export interface OpenStoreOptions<Settings> {
  /**
   * src/custom/store.ts's, which wins over AUDIO_STORE when there; given the settings
   * createAudioStore is (the whole Config: upstream cannot know which a fork's store reads).
   * @defaultValue none
   */
  readonly custom?: ((settings: Settings, logger: Logger) => Promise<AudioStore>) | undefined;
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
 * or the bucket reachable and usable. Any failure, a check that does not answer within
 * STORE_CHECK_DEADLINE_MS included, is a StorageError whose message names the settings to fix.
 */
export async function createAudioStore<Settings extends StoreSettings>(
  config: Settings,
  { custom, logger, writable = true }: OpenStoreOptions<Settings> = {},
): Promise<AudioStore> {
  if (custom !== undefined) {
    if (logger === undefined) throw new Error('a custom store needs a logger');
    return bounded(custom(config, logger), "src/custom/store.ts's createStore");
  }
  return openBuiltInStore(config, writable);
}

/** createAudioStore without a fork's store: the one AUDIO_STORE chooses, checked the same way. */
export async function openBuiltInStore(
  config: StoreSettings,
  writable: boolean,
): Promise<AudioStore> {
  if (config.audioStore === 'local') {
    const what = writable
      ? `the start-up check of AUDIO_DIR ${config.audioDir} (create it, write and fsync a probe file)`
      : `opening AUDIO_DIR ${config.audioDir}`;
    return bounded(createLocalAudioStore(config.audioDir, { writable }), what);
  }
  const store = createS3AudioStore(config);
  await bounded(
    store.checkBucket(),
    `the start-up check of S3_BUCKET ${config.s3Bucket} at S3_ENDPOINT ${config.s3Endpoint ?? '(AWS)'} (HeadBucket)`,
  );
  return store;
}

/**
 * `opening`, or a StorageError naming what it waited on: the one bound on every store's check,
 * here rather than in each store, so a fork's store gets it too. A check still blocked in a
 * system call is left behind; the caller gives up on the store (main.ts exits).
 */
async function bounded<T>(opening: Promise<T>, what: string): Promise<T> {
  try {
    return await withDeadline(opening, STORE_CHECK_DEADLINE_MS, what);
  } catch (error: unknown) {
    if (!(error instanceof DeadlineError)) throw error;
    throw new StorageError(`${error.message}: is the volume or the network hung?`, undefined, {
      cause: error,
    });
  }
}

/**
 * A worker's store at start: `given` (a fork's) or the one AUDIO_STORE chooses, then swept of the
 * partial downloads a killed process left, bounded like the store's check (the same volume,
 * listed before the first job).
 */
export async function startStore(
  config: StoreSettings,
  logger: Logger,
  given: AudioStore | undefined,
): Promise<AudioStore> {
  const store = given ?? (await openBuiltInStore(config, true));
  const removed = await withDeadline(
    store.removeStaleTemps(),
    STORE_CHECK_DEADLINE_MS,
    "the start-up sweep of the store's partial downloads",
  );
  if (removed.length > 0)
    logger.warn({ removed }, 'removed partial downloads left by a killed process');
  return store;
}
