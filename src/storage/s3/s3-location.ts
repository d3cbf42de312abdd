import type { S3Client } from '@aws-sdk/client-s3';
import type { S3Settings } from './s3-client.js';
import { s3StorageError } from './s3-storage-error.js';
import type { StorageError } from '../storage-errors.js';

/** Where the S3 store's objects are, and how trouble there is told: what each of its parts takes. */
export interface S3Location {
  readonly client: S3Client;
  readonly bucket: string;
  /** S3_PREFIX: every key of the store starts with it. */
  readonly prefix: string;
  /** The settings that name the place, for messages: `S3_BUCKET … at S3_ENDPOINT …`. */
  readonly where: string;
  /** The object key of a name. */
  key(name: string): string;
  /** A failure of `what` ("writing item-1.mp3") as a StorageError naming the place. */
  fail(error: unknown, what: string): StorageError;
}

export function s3Location(settings: S3Settings, client: S3Client): S3Location {
  const where = `S3_BUCKET ${settings.s3Bucket ?? ''} at S3_ENDPOINT ${settings.s3Endpoint ?? '(AWS)'}`;
  return {
    client,
    bucket: settings.s3Bucket ?? '',
    prefix: settings.s3Prefix,
    where,
    key: (name) => `${settings.s3Prefix}${name}`,
    fail: (error, what) => s3StorageError(error, `${what} in ${where}`),
  };
}
