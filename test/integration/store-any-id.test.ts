import { randomBytes, randomUUID } from 'node:crypto';
import {
  CreateBucketCommand,
  HeadObjectCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import fc from 'fast-check';
import { createGuardedAgent } from '../../src/download/guarded-agent';
import { createLogger } from '../../src/telemetry/logger';
import type { AudioStore } from '../../src/storage/audio-store';
import { fileStem } from '../../src/storage/file-name';
import { createS3AudioStore } from '../../src/storage/s3-audio-store';
import { NameCollisionError, StorageError } from '../../src/storage/storage-errors';
import { createAudioDownloader } from '../../src/workers/download-audio';
import type { CephGateway } from '../../src/dev/ceph-gateway';
import type { LocalCdn } from '../helpers/local-cdn';
import {
  bytesOf,
  deliveryOfItem,
  sha256,
  startStoreFixtures,
  type StoreFixtures,
} from '../helpers/store-fixtures';

// "Accepting is a promise to every carrier": the receiver takes any non-empty well-formed Unicode
// `data.id` up to its 1 MiB body, so both stores must hold an item of every such id, under a valid
// name, with its metadata right and its id recognised when the store reads its record back.
let fixtures: StoreFixtures;
let gateway: CephGateway;
let client: S3Client;
let cdn: LocalCdn;
beforeAll(async () => {
  fixtures = await startStoreFixtures('any-id');
  ({ gateway, client, cdn } = fixtures);
}, 120_000);
afterAll(() => fixtures.close());
const s3Settings = (bucket: string, prefix?: string) => fixtures.s3Settings(bucket, prefix);
const stores: Record<string, () => Promise<AudioStore>> = {
  local: () => fixtures.stores.local(),
  s3: () => fixtures.stores.s3(),
};

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
describe.each([
  ['local', 50, false],
  ['s3', 25, true],
])('the %s store holds an item of any accepted id', (kind, numRuns, endOnFailure) => {
  let store: AudioStore;
  let dispatcher: ReturnType<typeof createGuardedAgent>;
  beforeAll(async () => {
    store = await stores[kind]!();
    dispatcher = fixtures.agent();
  });
  afterAll(() => dispatcher.close());

  /** Downloads an item of `id` through the worker's own path; checks what the store holds. */
  async function storesItem(id: string): Promise<void> {
    const download = createAudioDownloader({
      config: { cdnOrigins: [cdn.origin], downloadMaxBytes: 1 << 20, downloadTimeoutMs: 30_000 },
      store,
      dispatcher,
    });
    const body = randomBytes(1000);
    const path = `/${randomUUID()}.wav`;
    cdn.route(path, (_req, res) =>
      res.writeHead(200, { 'content-type': 'audio/wav', 'content-length': body.length }).end(body),
    );
    const delivery = (jobId: string, firstRun: boolean) => deliveryOfItem(jobId, id, firstRun);
    const logger = createLogger('silent');
    const file = `${fileStem(id)}.wav`;
    // A file name is at most 255 bytes, an S3 key 1,024 (with S3_PREFIX).
    expect(Buffer.byteLength(file)).toBeLessThanOrEqual(255);

    const stored = await download(`${cdn.origin}${path}`, { id }, delivery('job-1', true), logger);
    expect(stored).toMatchObject({ id, file, bytes: body.length, sha256: sha256(body) });
    expect(await store.readMetadata(fileStem(id))).toEqual(stored);
    expect((await bytesOf(store, file)).equals(body)).toBe(true);

    // The store reads its record of the item back: a retry of the job finds the item its own
    // (the S3 store compares the object's recorded id; the local store the metadata's).
    const again = await download(`${cdn.origin}${path}`, { id }, delivery('job-1', false), logger);
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
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
    const store = createS3AudioStore(s3Settings(bucket), gateway.client());
    const file = `${fileStem(id)}.wav`;
    await store.write(file, [randomBytes(100)], { id });
    const head = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: `audio/${file}` }));
    const recorded = head.Metadata?.['item-id'] ?? '';
    // Printable ASCII only, within a tenth of AWS's 2 KB of user metadata.
    expect(recorded).toMatch(/^[!-~]{1,200}$/);
  });

  it('an object whose record is not one this store writes is another item’s, not trouble', async () => {
    const bucket = `aw-${randomUUID()}`;
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
    // A record no percent-decoding accepts (another tool's), under the name of an item.
    await client.send(
      new PutObjectCommand({
        Bucket: bucket,
        Key: 'audio/item.wav',
        Body: randomBytes(10),
        Metadata: { 'item-id': '%E0%A4%A' },
      }),
    );
    const store = createS3AudioStore(s3Settings(bucket), gateway.client());
    await expect(store.write('item.wav', [randomBytes(10)], { id: 'item' })).rejects.toThrow(
      NameCollisionError,
    );
  });

  it('a request the store can never accept fails for good, not as store trouble to retry', async () => {
    const bucket = `aw-${randomUUID()}`;
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
    // A key over S3's 1,024 bytes: no later attempt can store it.
    const store = createS3AudioStore(s3Settings(bucket, `${'p'.repeat(1100)}/`), gateway.client());
    const failure: unknown = await store.write('item.wav', [randomBytes(10)], { id: 'item' }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(StorageError);
    // BullMQ fails a job at once, without its retries, on an UnrecoverableError (by class or name).
    expect((failure as Error).name).toBe('UnrecoverableError');
  });
});
