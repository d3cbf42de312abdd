import { S3Client } from '@aws-sdk/client-s3';
import type { StorageSettings } from '../../config/storage-settings.js';

export type S3Settings = Pick<
  StorageSettings,
  's3Bucket' | 's3Prefix' | 's3Endpoint' | 's3Region' | 's3ForcePathStyle'
>;

/**
 * The AWS SDK's notice for this Node, as one line: on Node < 22 the SDK writes nine lines to
 * stderr at its first client, which would break a one-line start-up error. Turns that notice off
 * and returns the line for the caller to print its own way (a log line, a `local-s3:` line);
 * undefined on Node 22 and later.
 */
export function quietSdkNodeNotice(): string | undefined {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const major = Number(process.versions.node.split('.')[0]);
  return major < 22
    ? `Node ${process.versions.node}: AWS SDK releases after the first week of January 2027 need Node 22 or later`
    : undefined;
}

/**
 * An S3 client for AUDIO_STORE=s3. Against a custom endpoint (Ceph RGW, MinIO, R2, B2) the
 * SDK's default streaming checksums (since 3.729) are turned down to "when required": those
 * stores reject or mangle the aws-chunked trailers. Credentials: the SDK's default chain.
 */
export function createS3Client(settings: S3Settings): S3Client {
  // The start-up report says it, in one log line (startup-report.ts).
  quietSdkNodeNotice();
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
