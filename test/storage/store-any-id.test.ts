import { randomBytes, randomUUID } from 'node:crypto';
import { CreateBucketCommand, HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import fc from 'fast-check';
import type { Job } from 'bullmq';
import request from 'supertest';
import { createGuardedAgent } from '../../src/download/guarded-agent';
import { startWorkers } from '../../src/worker/start-workers';
import { createLogger } from '../../src/telemetry/logger';
import type { AudioStore } from '../../src/storage/audio-store';
import { fileStem } from '../../src/storage/file-name';
import { createS3AudioStore } from '../../src/storage/s3/s3-audio-store';
import {
  NameCollisionError,
  StorageError,
  StorageRefusedError,
} from '../../src/storage/storage-errors';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';
import { audio } from '../../harness/local-cdn';
import {
  bytesOf,
  deliveryOfItem,
  sha256,
  useStoreFixtures,
  type StoreKind,
} from '../helpers/store-fixtures';
import { createTestReceiver, signed, testConfig } from '../helpers/test-receiver';

// "Accepting is a promise to every carrier": the receiver takes any non-empty well-formed Unicode
// `data.id` up to its 1 MiB body, so both stores must hold an item of every such id, under a valid
// name, with its metadata right and its id recognised when the store reads its record back.
const fixtures = useStoreFixtures('any-id');

/**
 * Well-formed Unicode only (the receiver refuses lone surrogates): graphemes, every code point
 * including astral ones and controls, the characters that make paths and headers go wrong, and
 * ids long enough to pass every limit (S3's 2 KB of user metadata, a file name's 255 bytes).
 */
const tricky = fc.constantFrom('/', '..', '.', '\n', '\r', '\0', '\t', ' ', '%', ':', '日', '😀');
const anyId = fc
  .oneof(
    fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }),
    fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }),
    fc.string({
      unit: fc.oneof(tricky, fc.string({ unit: 'binary', maxLength: 2 })),
      minLength: 1,
    }),
    fc.string({ unit: 'binary', minLength: 190, maxLength: 260 }),
    fc.string({ unit: 'grapheme-ascii', minLength: 900, maxLength: 20_000 }),
    fc.string({ unit: 'binary', minLength: 2_000, maxLength: 20_000 }),
  )
  .filter((id) => id.length > 0);
const examples: [string, string][] = [
  'tts_日本語',
  'a\nb',
  'x'.repeat(250),
  'y'.repeat(20_000),
  '../../etc/passwd',
  'sha256:' + 'a'.repeat(64),
  '%zz',
].map((id) => [
  id.length > 40 ? `${JSON.stringify(id.slice(0, 12))}… (${id.length})` : JSON.stringify(id),
  id,
]);

// Shrinking a failure costs a request per step against S3: it reports the first one as found.
describe.each<[StoreKind, number, boolean]>([
  ['local', 50, false],
  ['s3', 25, true],
])('the %s store holds an item of any accepted id', (kind, numRuns, endOnFailure) => {
  let store: AudioStore;
  let dispatcher: ReturnType<typeof createGuardedAgent>;
  beforeAll(async () => {
    store = await fixtures.stores[kind]();
    dispatcher = fixtures.agent();
  });
  afterAll(() => dispatcher.close());

  /** Downloads an item of `id` through the worker's own path; checks what the store holds. */
  async function storesItem(id: string): Promise<void> {
    const download = fixtures.downloader(store, dispatcher);
    const body = randomBytes(1000);
    const path = `/${randomUUID()}.wav`;
    fixtures.cdn.route(path, (_req, res) =>
      res.writeHead(200, { 'content-type': 'audio/wav', 'content-length': body.length }).end(body),
    );
    const url = `${fixtures.cdn.origin}${path}`;
    const delivery = (jobId: string, firstRun: boolean) => deliveryOfItem(jobId, id, firstRun);
    const logger = createLogger('silent');
    const file = `${fileStem(id)}.wav`;
    // A file name is at most 255 bytes, an S3 key 1,024 (with S3_PREFIX).
    expect(Buffer.byteLength(file)).toBeLessThanOrEqual(255);

    const stored = await download(url, { id }, delivery('job-1', true), logger);
    expect(stored).toMatchObject({ id, file, bytes: body.length, sha256: sha256(body) });
    expect(await store.readMetadata(fileStem(id))).toEqual(stored);
    expect((await bytesOf(store, file)).equals(body)).toBe(true);

    // The store reads its record of the item back: a retry of the job finds the item its own
    // (the S3 store compares the object's recorded id; the local store the metadata's).
    const again = await download(url, { id }, delivery('job-1', false), logger);
    expect(again).toEqual(stored);
    // And the item's object is this item's to replace, not another's.
    const replacement = randomBytes(500);
    await store.write(file, [replacement], { id });
    expect((await bytesOf(store, file)).equals(replacement)).toBe(true);
    if (kind === 's3') {
      // ...and never another item's: the record tells them apart.
      await expect(store.write(file, [randomBytes(10)], { id: `${id}-other` })).rejects.toThrow(
        NameCollisionError,
      );
    }
  }

  it.each(examples)('%s', async (_label, id) => storesItem(id), 30_000);

  it(`every generated id (${numRuns} runs)`, async () => {
    await fc.assert(fc.asyncProperty(anyId, storesItem), { numRuns, endOnFailure });
  }, 240_000);
});

describe('the S3 store carries its record of an item in bounded, header-safe metadata', () => {
  it.each(examples)('%s', async (_label, id) => {
    const bucket = `aw-${randomUUID()}`;
    await fixtures.client.send(new CreateBucketCommand({ Bucket: bucket }));
    const store = createS3AudioStore(fixtures.s3Settings(bucket), fixtures.gateway.client());
    const file = `${fileStem(id)}.wav`;
    await store.write(file, [randomBytes(100)], { id });
    const head = await fixtures.client.send(
      new HeadObjectCommand({ Bucket: bucket, Key: `audio/${file}` }),
    );
    const recorded = head.Metadata?.['item-id'] ?? '';
    // Printable ASCII only, within a tenth of AWS's 2 KB of user metadata.
    expect(recorded).toMatch(/^[!-~]{1,200}$/);
  });

  it('an object whose record is not one this store writes is another item’s, not trouble', async () => {
    const bucket = `aw-${randomUUID()}`;
    await fixtures.client.send(new CreateBucketCommand({ Bucket: bucket }));
    // A record no percent-decoding accepts (another tool's), under the name of an item.
    await fixtures.client.send(
      new PutObjectCommand({
        Bucket: bucket,
        Key: 'audio/item.wav',
        Body: randomBytes(10),
        Metadata: { 'item-id': '%E0%A4%A' },
      }),
    );
    const store = createS3AudioStore(fixtures.s3Settings(bucket), fixtures.gateway.client());
    await expect(store.write('item.wav', [randomBytes(10)], { id: 'item' })).rejects.toThrow(
      NameCollisionError,
    );
  });
});

describe('a request the S3 store can never accept', () => {
  it('fails its job at once: one attempt of three, its reason kept', async () => {
    // A key over S3's 1,024 bytes: no later attempt can store it.
    const store = await fixtures.stores.s3(`${'p'.repeat(1100)}/`);
    const refusal: unknown = await store.write('item.wav', [randomBytes(10)], { id: 'item' }).then(
      () => undefined,
      (error: unknown) => error,
    );
    // Store trouble still, to every caller that tells it from a download's, named as what it is.
    expect(refusal).toBeInstanceOf(StorageRefusedError);
    expect(refusal).toBeInstanceOf(StorageError);

    // The worker as it runs, with retries to spare: the job still gets its one attempt only.
    const env = {
      CDN_URL: fixtures.cdn.origin,
      DOWNLOAD_ALLOW_PRIVATE_IPS: 'true',
      DOWNLOAD_ATTEMPTS: '3',
      DOWNLOAD_BACKOFF_MS: '20',
      ARCHIVE_RETENTION_HOURS: '0',
    };
    const receiver = await createTestReceiver(env);
    const config = testConfig({ ...env, QUEUE_PREFIX: receiver.config.queuePrefix });
    const workers = await startWorkers(config, createLogger('silent'), {
      store,
      ca: fixtures.cdn.ca,
    });
    try {
      const failed = new Promise<Job>((resolve) => {
        workers.worker.on('failed', (job) => {
          if (job?.finishedOn) resolve(job);
        });
      });
      const path = `/${randomUUID()}.wav`;
      fixtures.cdn.route(path, audio(randomBytes(100)));
      const delivery = sampleDelivery('audio.ready', {
        id: 'refused',
        data: { audio_url: `${fixtures.cdn.origin}${path}` },
      });
      const { raw, headers } = signed(delivery);
      await request(receiver.listener).post('/webhooks').set(headers).send(raw).expect(202);
      const job = await failed;
      expect(job.attemptsMade).toBe(1);
      expect(job.failedReason).toMatch(/refused for good: no retry can store it/);
      expect(fixtures.cdn.hits.get(path)).toBe(1);
    } finally {
      await workers.close();
      await receiver.close();
    }
  });
});
