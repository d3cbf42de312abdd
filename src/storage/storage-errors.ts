import { NeverRetryError, type NeverRetry } from '../jobs/retry-policy.js';

/**
 * The audio could not be stored: a full disk, a read-only or missing AUDIO_DIR, no permission.
 * Not a download failure, and named as what it is. It is retried with the job's backoff (an
 * operator can free space or fix a mount meanwhile), and a custom AudioStore should throw it too.
 */
export class StorageError extends Error {
  override name = 'StorageError';
  constructor(
    message: string,
    /** The system error code (ENOSPC, EACCES, EROFS…), when there is one. */
    readonly code?: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * The store refused a request that no later attempt can change (S3: a key over 1,024 bytes,
 * metadata over 2 KB). A StorageError still, so every caller that tells store trouble from a
 * download's (the downloader, the CLI, start-up) keeps telling it; but it says NeverRetry, so the
 * worker's retry policy fails the job at once: it stays in `failed` for a person to look at, and
 * is not retried DOWNLOAD_ATTEMPTS times in vain.
 */
export class StorageRefusedError extends StorageError implements NeverRetry {
  override name = 'StorageRefusedError';
  readonly neverRetry = true;

  constructor(message: string, options?: ErrorOptions) {
    super(message, undefined, options);
  }
}

const PLAIN: Readonly<Record<string, string>> = {
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
  EROFS: 'read-only file system',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  ENOENT: 'the directory is gone',
  ENOTDIR: 'not a directory',
  EEXIST: 'a file is in the way',
  EISDIR: 'a directory is in the way',
  EIO: 'I/O error',
  EMFILE: 'too many open files',
};

/** Wraps a filesystem error of `what` (e.g. "writing item-1.mp3") in `dir` as a StorageError. */
export function storageError(error: unknown, what: string, dir: string): StorageError {
  if (error instanceof StorageError) return error;
  const code = (error as NodeJS.ErrnoException | null)?.code;
  const reason = code === undefined ? String(error) : `${code}, ${PLAIN[code] ?? 'system error'}`;
  return new StorageError(`storage failed ${what} in AUDIO_DIR ${dir}: ${reason}`, code, {
    cause: error,
  });
}

/**
 * Two different ids would be stored under one name. Never overwrite another item's audio: the
 * job fails at once, loudly, and stays in `failed` for a person to look at.
 */
export class NameCollisionError extends NeverRetryError {
  override name = 'NameCollisionError';
  constructor(stem: string, storedId: string, newId: string) {
    super(
      `file name collision: ${stem} already holds the audio of id ${JSON.stringify(storedId)}, ` +
        `not ${JSON.stringify(newId)}; refusing to overwrite it`,
    );
  }
}
