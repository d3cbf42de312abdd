import { describeError } from '../../util/describe-error.js';
import { S3ServiceException } from '@aws-sdk/client-s3';
import { StorageError, StorageRefusedError } from '../storage-errors.js';

/**
 * What S3 answers to a request that no later attempt can change: a key over 1,024 bytes, user
 * metadata over 2 KB, a body over the largest PUT, an argument it cannot take. Not a code-less
 * 400: AWS's RequestTimeout is a 400 too, and an expired token (ExpiredToken, 400) is fixed by
 * the credential chain's next refresh, so only these codes, by name, fail a job at once.
 */
const REFUSED_CODES: ReadonlySet<string> = new Set([
  'KeyTooLongError',
  'MetadataTooLarge',
  'EntityTooLarge',
  'InvalidArgument',
  'InvalidObjectName',
]);
/** Too large, a URI too long, headers too large: the same request is refused again. */
const REFUSED_STATUSES: ReadonlySet<number> = new Set([413, 414, 431]);

/**
 * Store trouble (5xx, throttling, timeouts, a refused connection, access denied) as StorageError:
 * the job is retried with its backoff, never failed for good because the store was away. A
 * request the store can never accept is a StorageRefusedError: retrying it only delays the
 * failure by DOWNLOAD_ATTEMPTS backoffs and hides its cause.
 */
export function s3StorageError(error: unknown, what: string): StorageError {
  if (error instanceof StorageError) return error;
  const message = `storage failed ${what}: ${describeError(error)}`;
  return isRefusal(error)
    ? new StorageRefusedError(`${message} (refused for good: no retry can store it)`, {
        cause: error,
      })
    : new StorageError(message, undefined, { cause: error });
}

function isRefusal(error: unknown): boolean {
  const status = statusOf(error);
  if (status !== undefined && REFUSED_STATUSES.has(status)) return true;
  return status === 400 && error instanceof Error && REFUSED_CODES.has(error.name);
}

export function statusOf(error: unknown): number | undefined {
  return error instanceof S3ServiceException ? error.$metadata.httpStatusCode : undefined;
}
