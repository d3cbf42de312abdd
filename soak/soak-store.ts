import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { join } from 'node:path';
import { startCephGateway } from '../src/dev/ceph-gateway.js';
import type { StoreContents } from './archive-lines.js';
import { readLocalStore } from './read-local-store.js';
import { readS3Store } from './read-s3-store.js';
import { mountSmallDisk } from './tmpfs.js';

/**
 * The audio store of a run and its fault. `local`: AUDIO_DIR on a tmpfs of its own, the fault
 * its disk full (every free block taken, then given back). `s3`: a bucket of the real Ceph RADOS
 * Gateway the tests use (src/dev/ceph-gateway.ts); its fault is the gateway stopped and started
 * again (the cluster keeps the objects): filling a Ceph cluster would take the machine's memory,
 * since its OSD keeps objects in memory.
 */
export interface SoakStore {
  readonly kind: 'local' | 's3';
  readonly env: Readonly<Record<string, string>>;
  /** The report's name of this store's fault. */
  readonly faultKind: 'store_full' | 'store_down';
  faultOn(): Promise<void>;
  faultOff(): Promise<void>;
  read(): Promise<StoreContents>;
  close(): Promise<void>;
}

const BUCKET = 'soak';
const PREFIX = 'audio/';

export async function startStore(
  kind: 'local' | 's3',
  dir: string,
  bytes: number,
): Promise<SoakStore> {
  if (kind === 'local') {
    const disk = await mountSmallDisk(join(dir, 'disk'), bytes);
    const audioDir = join(disk.dir, 'audio');
    return {
      kind,
      env: { AUDIO_STORE: 'local', AUDIO_DIR: audioDir },
      faultKind: 'store_full',
      faultOn: () => disk.fill(),
      faultOff: () => {
        disk.free();
        return Promise.resolve();
      },
      read: () => readLocalStore(audioDir),
      close: () => disk.unmount(),
    };
  }
  // The OSD's memory: what the run stores, twice (objects are replaced, multipart parts linger).
  const gateway = await startCephGateway({ memstoreBytes: Math.max(1024 ** 3, bytes * 2) });
  // The soak's own reader: the gateway's client, with deadlines (a read once hung for 10 minutes
  // on a socket of a gateway just restarted) and more attempts.
  const client = new S3Client({
    region: 'us-east-1',
    endpoint: gateway.endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: gateway.accessKeyId, secretAccessKey: gateway.secretAccessKey },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    maxAttempts: 5,
    requestHandler: { connectionTimeout: 5_000, requestTimeout: 30_000 },
  });
  try {
    await client.send(new CreateBucketCommand({ Bucket: BUCKET }));
  } catch (error: unknown) {
    client.destroy();
    await gateway.stop();
    throw error;
  }
  return {
    kind,
    env: { ...gateway.env, S3_BUCKET: BUCKET, S3_PREFIX: PREFIX },
    faultKind: 'store_down',
    faultOn: () => gateway.stopGateway(),
    faultOff: () => gateway.startGateway(),
    read: () => readS3Store(client, BUCKET, PREFIX),
    async close() {
      client.destroy();
      await gateway.stop();
    },
  };
}
