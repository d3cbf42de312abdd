/**
 * Baseline for the S3 end-to-end run, "naive S3 worker": fetch the audio and PUT the two objects
 * the service writes, `<id>.mp3` and `<id>.json` (the delivery's data), with the same SDK client
 * the service builds (createS3Client: the same endpoint, path style and checksum settings), and
 * nothing else: plain PUTs, no origin or address checks, no size cap, no hash, no condition, no
 * archive. The service's S3 worker is measured as a ratio to this, against the same gateway, in
 * the same run. NAIVE_S3_OBJECTS=1 writes the audio alone: a figure printed for information.
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { createS3Client } from '../../src/storage/s3/s3-audio-store.js';
import { runNaiveWorker } from './naive-job-worker.js';

const bucket = process.env.S3_BUCKET ?? '';
const prefix = process.env.S3_PREFIX ?? '';
const audioOnly = process.env.NAIVE_S3_OBJECTS === '1';
const client = createS3Client({
  s3Bucket: bucket,
  s3Prefix: prefix,
  s3Endpoint: process.env.S3_ENDPOINT,
  s3Region: process.env.S3_REGION ?? 'us-east-1',
  s3ForcePathStyle: process.env.S3_FORCE_PATH_STYLE === 'true',
});
const put = (key: string, body: Buffer | string) =>
  client.send(new PutObjectCommand({ Bucket: bucket, Key: `${prefix}${key}`, Body: body }));
runNaiveWorker(async (id, body, data) => {
  await put(`${id}.mp3`, body);
  if (!audioOnly) await put(`${id}.json`, JSON.stringify(data));
});
