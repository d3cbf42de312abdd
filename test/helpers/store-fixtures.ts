import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand, type S3Client } from '@aws-sdk/client-s3';
import { startCephGateway, type CephGateway } from '../../src/dev/ceph-gateway';
import { createGuardedAgent } from '../../src/download/guarded-agent';
import type { DeliveryInfo } from '../../src/hooks/hook-context';
import type { AudioStore } from '../../src/storage/audio-store';
import { createLocalAudioStore } from '../../src/storage/local-audio-store';
import { createS3AudioStore } from '../../src/storage/s3-audio-store';
import { startLocalCdn, type LocalCdn } from './local-cdn';

/** Both stores over real parts: a folder of their own, a bucket on a private Ceph gateway. */
export interface StoreFixtures {
  readonly gateway: CephGateway;
  readonly client: S3Client;
  readonly cdn: LocalCdn;
  /** A new, empty store of each kind (`prefix`: the S3 store's S3_PREFIX). */
  readonly stores: Readonly<Record<'local' | 's3', (prefix?: string) => Promise<AudioStore>>>;
  /** The S3 store's settings for `bucket`. */
  s3Settings(bucket: string, prefix?: string): Parameters<typeof createS3AudioStore>[0];
  /** The worker's guarded agent, trusting the CDN's certificate. */
  agent(): ReturnType<typeof createGuardedAgent>;
  close(): Promise<void>;
}

export async function startStoreFixtures(label: string): Promise<StoreFixtures> {
  const [gateway, cdn] = await Promise.all([startCephGateway(), startLocalCdn()]);
  const client = gateway.client();
  const dirs: string[] = [];
  const s3Settings = (bucket: string, prefix = 'audio/') => ({
    s3Bucket: bucket,
    s3Prefix: prefix,
    s3Endpoint: gateway.endpoint,
    s3Region: 'us-east-1',
    s3ForcePathStyle: true,
  });
  return {
    gateway,
    client,
    cdn,
    s3Settings,
    stores: {
      local: () => {
        const dir = mkdtempSync(join(tmpdir(), `aw-${label}-`));
        dirs.push(dir);
        return createLocalAudioStore(dir);
      },
      s3: async (prefix) => {
        const bucket = `aw-${randomUUID()}`;
        await client.send(new CreateBucketCommand({ Bucket: bucket }));
        return createS3AudioStore(s3Settings(bucket, prefix), gateway.client());
      },
    },
    agent: () =>
      createGuardedAgent({
        allowPrivateIps: true,
        ca: cdn.ca,
        connectTimeoutMs: 5000,
        headersTimeoutMs: 5000,
        bodyIdleTimeoutMs: 5000,
      }),
    async close() {
      client.destroy();
      await cdn.close();
      await gateway.stop();
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A run of a job of the item `id` (a replay, a retry, one taken over: it looks first). */
export function deliveryOfItem(jobId: string, id: string, firstRun = false): DeliveryInfo {
  return {
    jobId,
    event: 'audio.ready',
    id,
    receivedAt: new Date().toISOString(),
    attempt: 1,
    replay: false,
    firstRun,
  };
}

export const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** A stored file's bytes, read through the store. */
export async function bytesOf(store: AudioStore, name: string): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of store.read(name)) chunks.push(chunk);
  return Buffer.concat(chunks);
}
