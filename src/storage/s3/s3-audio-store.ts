import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import {
  GetObjectCommand,
  HeadBucketCommand,
  AbortMultipartUploadCommand,
  ListMultipartUploadsCommand,
} from '@aws-sdk/client-s3';
import type { FileArea, AudioMetadata, AudioStore } from '../audio-store.js';
import { createS3FileArea } from './s3-file-area.js';
import { createS3Client, type S3Settings } from './s3-client.js';
import { s3ItemObject } from './s3-item-object.js';
import { s3Location, type S3Location } from './s3-location.js';
import { statusOf } from './s3-storage-error.js';
import { s3WriteObject } from './s3-write-object.js';
import { s3WriteWithMetadata } from './s3-write-with-metadata.js';
import { describeError } from '../../util/describe-error.js';
import { StorageError } from '../storage-errors.js';

// Importers of the S3 store (index.ts, the bench) take its client from here too.
export { createS3Client, type S3Settings } from './s3-client.js';

/** An incomplete multipart upload older than this was left by a killed worker: aborted at start. */
const STALE_UPLOAD_MS = 60 * 60 * 1000;

export interface S3StoreOptions {
  /** An incomplete upload older than this is a killed worker's. @defaultValue 1 hour */
  readonly staleUploadMs?: number;
  /** ListMultipartUploads' page size. @defaultValue the store's (1,000 on S3) */
  readonly uploadsPerPage?: number;
}

/**
 * Audio in an S3-compatible bucket, under `<S3_PREFIX><name>`. Every object under its final key
 * is whole: a file smaller than a part is one PUT; a larger one is one streamed PUT when its
 * length (up to 5 GiB) is known, else a multipart upload that exists under its key only once
 * completed after its last part, and is aborted when it fails (a killed worker's leftovers are
 * aborted at the next start, and by the bucket lifecycle rule in docs/storage.md). The audio
 * streams from the CDN into the upload; at most a few parts are held (s3-write-object.ts).
 *
 * Never overwritten by another item, never removed: writes are create-only (`If-None-Match: *`),
 * and each object records the id it holds. An object of the same id (an earlier run that died
 * before its metadata, or another run of the item at the same time: a replay beside the original
 * job, a stalled job re-run) is whole, as every object under its key is, and is replaced
 * atomically by the write (`If-Match` on its ETag, or a completed multipart upload), never
 * deleted first: a second run that then failed for good (an expired signed URL) would otherwise
 * leave the item gone. One of another id, or of none, fails the job (NameCollisionError). Ceph
 * ignores `If-None-Match` on CompleteMultipartUpload, so a multipart upload looks first; a key is
 * a function of the id (storage/file-name.ts), so a race after the look is between runs of one item.
 */
export function createS3AudioStore(
  settings: S3Settings,
  client = createS3Client(settings),
  options: S3StoreOptions = {},
) {
  const s3 = s3Location(settings, client);
  const staleUploadMs = options.staleUploadMs ?? STALE_UPLOAD_MS;
  const store: AudioStore & { checkBucket(): Promise<void>; readonly files: FileArea } = {
    files: createS3FileArea(s3),
    refusesOtherItems: true,

    async write(name, source, options) {
      await s3WriteObject(s3, name, source, options);
    },

    writeWithMetadata: (audio, metadata) => s3WriteWithMetadata(s3, audio, metadata),

    read(name) {
      return (async function* () {
        const answer = await client
          .send(new GetObjectCommand({ Bucket: s3.bucket, Key: s3.key(name) }))
          .catch((error: unknown) => {
            throw s3.fail(error, `reading ${name}`);
          });
        yield* answer.Body as Readable;
      })();
    },

    async readMetadata(stem) {
      try {
        const answer = await client.send(
          new GetObjectCommand({ Bucket: s3.bucket, Key: s3.key(`${stem}.json`) }),
        );
        if (answer.Body === undefined) return undefined;
        return JSON.parse(await answer.Body.transformToString('utf8')) as AudioMetadata;
      } catch (error: unknown) {
        if (statusOf(error) === 404) return undefined;
        throw s3.fail(error, `reading ${stem}.json`);
      }
    },

    async holds(name, bytes, sha256) {
      const found = await s3ItemObject(s3, name);
      if (found?.bytes !== bytes) return false;
      const hash = createHash('sha256');
      for await (const chunk of store.read(name)) hash.update(chunk);
      return hash.digest('hex') === sha256;
    },

    removeStaleTemps: () => s3AbortStaleUploads(s3, staleUploadMs, options.uploadsPerPage),

    checkBucket: () => s3CheckBucket(s3),
  };
  return store;
}

/** The start-up check's bound: an endpoint that does not answer must not hang the start. */
const CHECK_TIMEOUT_MS = 10_000;

/** At start: the bucket exists and these credentials may use it; else one line to fix it. */
export async function s3CheckBucket(s3: S3Location): Promise<void> {
  try {
    await s3.client.send(new HeadBucketCommand({ Bucket: s3.bucket }), {
      abortSignal: AbortSignal.timeout(CHECK_TIMEOUT_MS),
    });
  } catch (error: unknown) {
    const status = statusOf(error);
    const reason =
      status === 404
        ? 'the bucket does not exist'
        : status === 403 || status === 400
          ? `refused (${status}): check the credentials and the bucket policy`
          : isMissingCredentials(error)
            ? 'no credentials: the AWS SDK found none (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE in ~/.aws, a web identity token, or a pod or instance role)'
            : `unreachable: ${describeError(error)}`;
    throw new StorageError(`${s3.where}: ${reason}`, undefined, { cause: error });
  }
}

/** The SDK's default chain found nothing: the endpoint was never asked, so not "unreachable". */
function isMissingCredentials(error: unknown): boolean {
  return error instanceof Error && error.name === 'CredentialsProviderError';
}

/**
 * AudioStore.removeStaleTemps of the S3 store: aborts the incomplete multipart uploads under
 * S3_PREFIX started more than `staleUploadMs` ago (a killed worker's), a page of the listing at
 * a time, `uploadsPerPage` a page (undefined: the store's own, 1,000 on S3). Returns their keys.
 */
export async function s3AbortStaleUploads(
  s3: S3Location,
  staleUploadMs: number,
  uploadsPerPage: number | undefined,
): Promise<string[]> {
  const removed: string[] = [];
  const before = Date.now() - staleUploadMs;
  let marker: { KeyMarker?: string; UploadIdMarker?: string } = {};
  for (;;) {
    const listed = await s3.client
      .send(
        new ListMultipartUploadsCommand({
          Bucket: s3.bucket,
          Prefix: s3.prefix,
          ...(uploadsPerPage === undefined ? {} : { MaxUploads: uploadsPerPage }),
          ...marker,
        }),
      )
      .catch((error: unknown) => {
        throw s3.fail(error, 'listing incomplete uploads');
      });
    for (const left of listed.Uploads ?? []) {
      // An upload whose start is not known is not known to be stale: the lifecycle rule
      // (deploy/overlays/s3/lifecycle.json) removes it if it is.
      const initiated = left.Initiated?.getTime();
      if (left.Key === undefined || left.UploadId === undefined) continue;
      if (initiated === undefined || initiated > before) continue;
      await s3.client
        .send(
          new AbortMultipartUploadCommand({
            Bucket: s3.bucket,
            Key: left.Key,
            UploadId: left.UploadId,
          }),
        )
        .catch((error: unknown) => {
          throw s3.fail(error, `aborting the incomplete upload of ${left.Key ?? ''}`);
        });
      removed.push(left.Key);
    }
    if (listed.IsTruncated !== true) return removed;
    marker = {
      ...(listed.NextKeyMarker === undefined ? {} : { KeyMarker: listed.NextKeyMarker }),
      ...(listed.NextUploadIdMarker === undefined
        ? {}
        : { UploadIdMarker: listed.NextUploadIdMarker }),
    };
  }
}
