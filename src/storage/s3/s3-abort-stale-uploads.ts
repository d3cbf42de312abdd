import { AbortMultipartUploadCommand, ListMultipartUploadsCommand } from '@aws-sdk/client-s3';
import type { S3Location } from './s3-location.js';

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
