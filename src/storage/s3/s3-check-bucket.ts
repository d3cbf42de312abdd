import { HeadBucketCommand } from '@aws-sdk/client-s3';
import type { S3Location } from './s3-location.js';
import { describeError } from '../../util/describe-error.js';
import { statusOf } from './s3-storage-error.js';
import { StorageError } from '../storage-errors.js';

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
