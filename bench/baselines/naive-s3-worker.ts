/**
 * Baseline for the S3 end-to-end run, "naive S3 worker": fetch the audio and PUT it as one
 * object with the same SDK client the service builds (createS3Client: the same endpoint, path
 * style and checksum settings), and nothing else: no origin or address checks, no size cap, no
 * hash, no conditional write, no metadata object, no archive. The service's S3 worker is
 * measured as a ratio to this, against the same gateway, in the same run.
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { createS3Client } from '../../src/storage/s3/s3-audio-store.js';
import { runNaiveWorker } from './naive-job-worker.js';

const bucket = process.env.S3_BUCKET ?? '';
const prefix = process.env.S3_PREFIX ?? '';
const client = createS3Client({
  s3Bucket: bucket,
  s3Prefix: prefix,
  s3Endpoint: process.env.S3_ENDPOINT,
  s3Region: process.env.S3_REGION ?? 'us-east-1',
  s3ForcePathStyle: process.env.S3_FORCE_PATH_STYLE === 'true',
});
runNaiveWorker((id, body) =>
  client.send(new PutObjectCommand({ Bucket: bucket, Key: `${prefix}${id}.mp3`, Body: body })),
);
