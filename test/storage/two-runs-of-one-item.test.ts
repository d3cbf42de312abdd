import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
} from '@aws-sdk/client-s3';
import { createLogger } from '../../src/telemetry/logger';
import { withDeadline } from '../../src/util/deadline';
import type { AudioStore } from '../../src/storage/audio-store';
import { createLocalAudioStore } from '../../src/storage/local/local-audio-store';
import { createS3AudioStore } from '../../src/storage/s3/s3-audio-store';
import {
  bytesOf,
  deliveryOfItem,
  sha256,
  STORE_KINDS,
  useStoreFixtures,
} from '../helpers/store-fixtures';

// Two runs of one item at once are normal: a replay of a recent range beside the original job, a
// stalled job re-run by BullMQ, a retry. Whatever their order, a whole stored item is never
// removed, and both stores end the same way. The CDN serves the audio twice and refuses every
// later request (a signed URL that expired), so a run that lost the item could not get it back.
const fixtures = useStoreFixtures('two-runs');

/**
 * Serves `body` at a path of its own: the first request at once, the second once `release`
 * is called, every later one 403 (expired).
 */
function servedTwice(body: Buffer, chunked = false) {
  const path = `/${randomUUID()}.wav`;
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let secondAsked!: () => void;
  const second = new Promise<void>((resolve) => (secondAsked = resolve));
  fixtures.cdn.route(path, (_req, res, hit) => {
    const answer = () =>
      res
        .writeHead(200, {
          'content-type': 'audio/wav',
          ...(chunked ? {} : { 'content-length': body.length }),
        })
        .end(body);
    if (hit === 1) answer();
    else if (hit === 2) {
      secondAsked();
      void released.then(answer);
    } else res.writeHead(403).end('expired');
  });
  return { url: `${fixtures.cdn.origin}${path}`, path, release, second };
}

const delivery = deliveryOfItem;

describe.each(STORE_KINDS)('the %s store, two runs of one item overlapping', (kind) => {
  // 9 MiB: more than one S3 part, so the streamed PUT (the CDN declared the length) and the
  // multipart upload (it did not) are taken too.
  it.each([
    ['a small file (one PUT)', 40_000, false],
    ['a file of several parts with a content-length (one streamed PUT)', 9 * 1024 * 1024, false],
    ['a file of several parts, chunked (multipart)', 9 * 1024 * 1024, true],
  ])(
    '%s: the second run keeps the first run’s finished item; a third finds it whole without asking the CDN',
    async (_name, size, chunked) => {
      const store = await fixtures.stores[kind]();
      const dispatcher = fixtures.agent();
      const download = fixtures.downloader(store, dispatcher, 64 << 20);
      const logger = createLogger('silent');
      const body = randomBytes(size);
      const served = servedTwice(body, chunked);
      const id = `item-${randomUUID()}`;
      try {
        // Both look for earlier metadata before either has written any; the run whose request
        // came first finishes, then the other writes over a finished item of its own id.
        const runs = ['job-a', 'job-b'].map((jobId) =>
          download(served.url, { id }, delivery(jobId, id), logger),
        );
        await served.second;
        await Promise.race(runs);
        served.release();
        for (const run of await Promise.all(runs)) expect(run.sha256).toBe(sha256(body));

        const third = await download(served.url, { id }, delivery('job-c', id), logger);
        expect(fixtures.cdn.hits.get(served.path)).toBe(2);
        expect(third).toMatchObject({ id, bytes: size, sha256: sha256(body) });
        expect((await bytesOf(store, `${id}.wav`)).equals(body)).toBe(true);
        expect(await store.readMetadata(id)).toMatchObject({ id, sha256: sha256(body) });

        // The first run of yet another job of the item (a re-delivery past the dedupe window),
        // its signed URL expired by now (the CDN answers 403): the stored item is found. The S3
        // store, whose writes refuse other items, skips the look before a first run and makes
        // it after the failed download; the local store looks first.
        const fourth = await download(served.url, { id }, delivery('job-d', id, true), logger);
        expect(fourth).toMatchObject({ id, bytes: size, sha256: sha256(body) });
        expect(fixtures.cdn.hits.get(served.path)).toBe(kind === 's3' ? 3 : 2);
      } finally {
        await dispatcher.close();
      }
    },
    60_000,
  );
});

describe('the S3 store never removes what is not known to be its own', () => {
  const newBucket = async () => {
    const bucket = `aw-${randomUUID()}`;
    await fixtures.client.send(new CreateBucketCommand({ Bucket: bucket }));
    return bucket;
  };

  it.each([
    ['ends short of its declared length', 10 * 1024 * 1024, undefined],
    ['runs past its declared length', 8 * 1024 * 1024, undefined],
    ['fails (the CDN)', 12 * 1024 * 1024, new Error('the CDN went away')],
  ])(
    'a streamed PUT whose source %s stores nothing, and does not wait for the request timeout',
    async (_case, declared, failure) => {
      const bucket = await newBucket();
      const store = createS3AudioStore(fixtures.s3Settings(bucket), fixtures.gateway.client());
      const source = (function* () {
        for (let i = 0; i < 9; i++) yield randomBytes(1024 * 1024);
        if (failure !== undefined) throw failure;
      })();
      // The S3 client's request timeout is 60 s: a write that waited for it would end past this.
      const write = withDeadline(
        store.write('short.wav', source, { id: 'short', bytes: declared }),
        20_000,
        'the failed write',
      );
      if (failure === undefined) await expect(write).rejects.toThrow(/the source (ended|ran)/);
      else await expect(write).rejects.toBe(failure);
      const listed = await fixtures.client.send(new ListObjectsV2Command({ Bucket: bucket }));
      expect(listed.Contents ?? []).toEqual([]);
    },
    30_000,
  );

  it('a write without an id over an object that records no id is a collision; the object stays', async () => {
    const bucket = await newBucket();
    const theirs = randomBytes(100);
    await fixtures.client.send(
      new PutObjectCommand({ Bucket: bucket, Key: 'audio/x.wav', Body: theirs }),
    );
    const store = createS3AudioStore(fixtures.s3Settings(bucket), fixtures.gateway.client());
    await expect(store.write('x.wav', [randomBytes(50)])).rejects.toThrow(/file name collision/);
    expect((await bytesOf(store, 'x.wav')).equals(theirs)).toBe(true);
  });

  it('removeStaleTemps reads every page of ListMultipartUploads, and only under S3_PREFIX', async () => {
    const bucket = await newBucket();
    const start = (Key: string) =>
      fixtures.client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key }));
    for (const n of [1, 2, 3, 4, 5]) await start(`audio/left-${n}.wav`);
    await start('audio-backup/not-ours.wav');
    // Every upload counts as stale here; two per page: three pages.
    const store = createS3AudioStore(fixtures.s3Settings(bucket), fixtures.gateway.client(), {
      staleUploadMs: -60_000,
      uploadsPerPage: 2,
    });
    expect((await store.removeStaleTemps()).sort()).toEqual(
      [1, 2, 3, 4, 5].map((n) => `audio/left-${n}.wav`),
    );
    const left = await fixtures.client.send(new ListMultipartUploadsCommand({ Bucket: bucket }));
    expect((left.Uploads ?? []).map((upload) => upload.Key)).toEqual(['audio-backup/not-ours.wav']);
  });
});

// A CDN that changed the file between two runs of one item: each run downloads other bytes. The
// metadata always describes the audio beside it, whatever the order of the runs' writes. Three
// stores on one AUDIO_DIR or bucket stand for three worker processes, two runs in each: runs of
// one store take turns, those of others cannot.
const sharedStores: Record<string, () => Promise<AudioStore[]>> = {
  local: async () => {
    const dir = mkdtempSync(join(tmpdir(), 'aw-six-runs-'));
    return Promise.all([1, 2, 3].map(() => createLocalAudioStore(dir)));
  },
  s3: async () => {
    const bucket = `aw-${randomUUID()}`;
    await fixtures.client.send(new CreateBucketCommand({ Bucket: bucket }));
    const settings = fixtures.s3Settings(bucket);
    return [1, 2, 3].map(() => createS3AudioStore(settings, fixtures.gateway.client()));
  },
};

describe.each([
  ['local', 100],
  ['s3', 15],
])('the %s store, six runs of one item downloading different bytes', (kind, rounds) => {
  it(`leaves metadata describing the audio beside it (${rounds} rounds)`, async () => {
    const stores = await sharedStores[kind]!();
    const dispatcher = fixtures.agent();
    const downloads = stores.map((store) => fixtures.downloader(store, dispatcher));
    const store = stores[0]!;
    const logger = createLogger('silent');
    const mismatched: string[] = [];
    const failed: string[] = [];
    try {
      for (let round = 0; round < rounds; round++) {
        const path = `/${randomUUID()}.wav`;
        fixtures.cdn.route(path, (_req, res) => {
          const body = randomBytes(2000 + Math.floor(Math.random() * 2000));
          res
            .writeHead(200, { 'content-type': 'audio/wav', 'content-length': body.length })
            .end(body);
        });
        const id = `item-${randomUUID()}`;
        const runs = await Promise.allSettled(
          ['a', 'b', 'c', 'd', 'e', 'f'].map((run, n) =>
            downloads[n % downloads.length]!(
              `${fixtures.cdn.origin}${path}`,
              { id },
              delivery(`job-${run}`, id),
              logger,
            ),
          ),
        );
        for (const run of runs) if (run.status === 'rejected') failed.push(String(run.reason));
        const metadata = await store.readMetadata(id);
        const audio = await bytesOf(store, `${id}.wav`);
        if (metadata?.sha256 !== sha256(audio) || metadata.bytes !== audio.length)
          mismatched.push(id);
      }
    } finally {
      await dispatcher.close();
    }
    expect(mismatched).toEqual([]);
    expect(failed).toEqual([]);
  }, 120_000);
});
