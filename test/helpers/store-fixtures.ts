import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand, type S3Client } from '@aws-sdk/client-s3';
import type { Dispatcher } from 'undici';
import { startCephGateway, type CephGateway } from '../../src/dev/ceph-gateway';
import { createGuardedAgent } from '../../src/download/guarded-agent';
import type { DeliveryInfo } from '../../src/hooks/hook-context';
import type { AudioStore } from '../../src/storage/audio-store';
import { createLocalAudioStore } from '../../src/storage/local/local-audio-store';
import { createS3AudioStore } from '../../src/storage/s3/s3-audio-store';
import { createAudioDownloader } from '../../src/worker/download-audio';
import { startLocalCdn, type LocalCdn } from '../../harness/local-cdn';

/** The kinds of store, for `describe.each`. */
export const STORE_KINDS = ['local', 's3'] as const;
export type StoreKind = (typeof STORE_KINDS)[number];

/** Both stores over real parts: a folder of their own, a bucket on a private Ceph gateway. */
export interface StoreFixtures {
  readonly gateway: CephGateway;
  readonly client: S3Client;
  readonly cdn: LocalCdn;
  /** A new, empty store of each kind (`prefix`: the S3 store's S3_PREFIX). */
  readonly stores: Readonly<Record<StoreKind, (prefix?: string) => Promise<AudioStore>>>;
  /** The S3 store's settings for `bucket`. */
  s3Settings(bucket: string, prefix?: string): Parameters<typeof createS3AudioStore>[0];
  /** The worker's guarded agent, trusting the CDN's certificate. */
  agent(): ReturnType<typeof createGuardedAgent>;
  /** The worker's downloader into `store`, from the CDN, within `maxBytes` (1 MiB unless said). */
  downloader(
    store: AudioStore,
    dispatcher: Dispatcher,
    maxBytes?: number,
  ): ReturnType<typeof createAudioDownloader>;
  close(): Promise<void>;
}

async function startStoreFixtures(label: string): Promise<StoreFixtures> {
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
    downloader: (store, dispatcher, maxBytes = 1 << 20) =>
      createAudioDownloader({
        config: { cdnOrigins: [cdn.origin], downloadMaxBytes: maxBytes, downloadTimeoutMs: 30_000 },
        store,
        dispatcher,
      }),
    async close() {
      client.destroy();
      await cdn.close();
      await gateway.stop();
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A test file's fixtures, started in its beforeAll (the gateway may take a minute or two on a
 * loaded machine) and closed in its afterAll. Read them inside tests and hooks: until beforeAll
 * has run there is nothing to read, and reading throws.
 */
export function useStoreFixtures(label: string): Omit<StoreFixtures, 'close'> {
  let started: StoreFixtures | undefined;
  beforeAll(async () => {
    started = await startStoreFixtures(label);
  }, 120_000);
  afterAll(() => started?.close());
  const get = (): StoreFixtures => {
    if (started === undefined) throw new Error(`the ${label} store fixtures are not started yet`);
    return started;
  };
  return {
    get gateway() {
      return get().gateway;
    },
    get client() {
      return get().client;
    },
    get cdn() {
      return get().cdn;
    },
    get stores() {
      return get().stores;
    },
    s3Settings: (bucket, prefix) => get().s3Settings(bucket, prefix),
    agent: () => get().agent(),
    downloader: (store, dispatcher, maxBytes) => get().downloader(store, dispatcher, maxBytes),
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
