import { S3Client } from '@aws-sdk/client-s3';
import type { Config } from '../config/config.js';

export type S3Settings = Pick<
  Config,
  's3Bucket' | 's3Prefix' | 's3Endpoint' | 's3Region' | 's3ForcePathStyle'
>;

/**
 * An S3 client for AUDIO_STORE=s3. Against a custom endpoint (Ceph RGW, MinIO, R2, B2) the
 * SDK's default streaming checksums (since 3.729) are turned down to "when required": those
 * stores reject or mangle the aws-chunked trailers. Credentials: the SDK's default chain.
 */
export function createS3Client(settings: S3Settings): S3Client {
  // On Node < 22 the SDK writes a nine-line notice to stderr, which would break the one-line
  // start-up errors; the start-up report says the same in one log line (startup-report.ts).
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const custom = settings.s3Endpoint !== undefined;
  return new S3Client({
    region: settings.s3Region,
    ...(custom ? { endpoint: settings.s3Endpoint } : {}),
    forcePathStyle: settings.s3ForcePathStyle,
    requestChecksumCalculation: custom ? 'WHEN_REQUIRED' : 'WHEN_SUPPORTED',
    responseChecksumValidation: custom ? 'WHEN_REQUIRED' : 'WHEN_SUPPORTED',
    // The SDK retries throttling, 5xx and network errors itself (3 attempts); past that the job's
    // own backoff takes over, so a store that is away for minutes still loses nothing.
    maxAttempts: 3,
    cacheMiddleware: true,
    requestHandler: { connectionTimeout: 5_000, requestTimeout: 60_000 },
  });
}
