import {
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
} from '@aws-sdk/client-s3';
import { ARCHIVE_FOLDER, type FileArea } from '../audio-store.js';
import { archiveSegments } from '../archive-path.js';
import type { S3Location } from './s3-location.js';
import { statusOf } from './s3-storage-error.js';

/** Deletes in flight at once while removing an archive folder. */
const DELETES_IN_FLIGHT = 8;

/**
 * The store's small-files area as objects under `<S3_PREFIX>.archive/`: a PUT is whole by nature. There is no
 * append, so the archive puts its entries in batches, many lines to an object
 * (archive/batch-writer.ts). One DELETE per object when a folder is removed: DeleteObjects needs
 * a checksum header that S3-compatible stores disagree on (docs/replay.md), and batches keep an
 * hour's objects far fewer than its entries.
 */
export function createS3FileArea(s3: S3Location): FileArea {
  const { client, bucket } = s3;
  const root = `${s3.prefix}${ARCHIVE_FOLDER}/`;
  const fileKey = (path: string) => `${root}${archiveSegments(path, 'file').join('/')}`;
  const folderKey = (path: string) =>
    `${root}${archiveSegments(path, 'folder')
      .map((segment) => `${segment}/`)
      .join('')}`;
  /** Every page of a listing under `prefix`, one at a time. */
  async function* pages(prefix: string, delimiter?: string) {
    let token: string | undefined;
    do {
      const page = await client
        .send(
          new ListObjectsV2Command({
            Bucket: bucket,
            Prefix: prefix,
            ...(delimiter === undefined ? {} : { Delimiter: delimiter }),
            ...(token === undefined ? {} : { ContinuationToken: token }),
          }),
        )
        .catch((error: unknown) => {
          throw s3.fail(error, `listing ${prefix}`);
        });
      yield page;
      token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
  }
  return {
    async put(path, body) {
      await client
        .send(
          new PutObjectCommand({
            Bucket: bucket,
            Key: fileKey(path),
            Body: body,
            ContentLength: body.length,
            ContentType: 'application/json',
          }),
        )
        .catch((error: unknown) => {
          throw s3.fail(error, `archiving ${path}`);
        });
    },
    async get(path) {
      try {
        const answer = await client.send(
          new GetObjectCommand({ Bucket: bucket, Key: fileKey(path) }),
        );
        return answer.Body === undefined ? undefined : await answer.Body.transformToByteArray();
      } catch (error: unknown) {
        if (statusOf(error) === 404) return undefined;
        throw s3.fail(error, `reading the archive's ${path}`);
      }
    },
    async *list(path, options) {
      const prefix = folderKey(path);
      const deep = options?.deep === true;
      // The same names the local area lists: no dot-names (no temp of ours has one here, but a
      // tool's may), folders with a trailing `/`.
      const shown = (name: string) => !name.split('/').some((segment) => segment.startsWith('.'));
      for await (const page of pages(prefix, deep ? undefined : '/')) {
        for (const folder of page.CommonPrefixes ?? []) {
          const name = folder.Prefix?.slice(prefix.length);
          if (name !== undefined && shown(name)) yield name;
        }
        for (const object of page.Contents ?? []) {
          const name = object.Key?.slice(prefix.length);
          if (name !== undefined && name !== '' && shown(name)) yield name;
        }
      }
    },
    async remove(path) {
      for await (const page of pages(folderKey(path))) {
        const keys = (page.Contents ?? []).flatMap((object) =>
          object.Key === undefined ? [] : [object.Key],
        );
        for (let start = 0; start < keys.length; start += DELETES_IN_FLIGHT) {
          await Promise.all(
            keys.slice(start, start + DELETES_IN_FLIGHT).map((Key) =>
              client
                .send(new DeleteObjectCommand({ Bucket: bucket, Key }))
                .catch((error: unknown) => {
                  throw s3.fail(error, `removing ${Key}`);
                }),
            ),
          );
        }
      }
    },
  };
}
