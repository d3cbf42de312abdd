import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { serve } from '../../src/http-server/serve';
import { createLogger } from '../../src/telemetry/logger';
import { createProviderClient } from '../../src/provider/create-provider-client';
import { createStoreCacheArea } from '../../src/provider/store-cache-area';
import type { BlobArea } from '../../src/provider/tts-cache';
import { createLocalAudioStore } from '../../src/storage/local/local-audio-store';
import { createLocalBlobArea } from '../../src/provider/local-blob-area';
import { deleteKeys } from '../helpers/test-receiver';
import { afterTest } from '../helpers/after-test';

// The TTS cache when its bodies cannot be kept, and when the client runs on several hosts that
// share one Redis. A local provider counts the calls; every test has its own prefix and Redis
// connections, closed after it.
const WAV = randomBytes(20_000);
let prefix: string;
let calls: number;
let base: string;

beforeEach(async () => {
  prefix = `test-${randomUUID()}`;
  calls = 0;
  const provider = await serve(
    (req, res) => {
      calls++;
      req.resume();
      // A little latency, as a real provider has: askers at once overlap the call.
      setTimeout(() => res.writeHead(200, { 'content-type': 'audio/wav' }).end(WAV), 50);
    },
    0,
    '127.0.0.1',
  );
  base = `http://127.0.0.1:${String(provider.port)}`;
  afterTest(() => provider.close());
});

const TOKEN = 'sk_secret_token';

/** One host: its own Redis connection (the same Redis), its own cache instance and logger. */
async function host(cacheArea: BlobArea) {
  const redis = new Redis(process.env.REDIS_URL ?? '', { maxRetriesPerRequest: null });
  const logged: string[] = [];
  const client = await createProviderClient({
    baseUrl: base,
    keys: [{ id: 'key_a', token: TOKEN }],
    redis,
    prefix,
    cacheArea,
    logger: createLogger('warn', { write: (line: string) => void logged.push(line) }),
  });
  afterTest(async () => {
    await client.close();
    await deleteKeys(redis, `${prefix}:*`);
    redis.disconnect();
  });
  return { client, logged };
}

/**
 * A host as the CLI makes one: the bodies in the deployment's audio store, which every host
 * reads (here a local store on one folder both reach, as a shared volume or a bucket would be);
 * each host's own AUDIO_DIR holds none of them. Before, the CLI kept them in each host's
 * `<AUDIO_DIR>/.tts-cache`, and the same tests made 2 and 6 calls.
 */
async function storeHost(storeDir: string) {
  const store = await createLocalAudioStore(storeDir, { writable: false });
  return (await host(createStoreCacheArea(store.files!))).client;
}

function folder(): string {
  const made = mkdtempSync(join(tmpdir(), 'aw-tts-host-'));
  afterTest(() => rm(made, { recursive: true, force: true }));
  return made;
}

it('11. a cache that cannot write its bodies: every caller still gets the audio', async () => {
  // The cache folder's path runs through a regular file: every write fails with ENOTDIR.
  const audioDir = folder();
  writeFileSync(join(audioDir, 'not-a-folder'), 'x');
  const { client, logged } = await host(
    createLocalBlobArea(join(audioDir, 'not-a-folder', '.tts-cache')),
  );
  for (let i = 0; i < 3; i++) {
    const result = await client.tts({ text: 'unkept words', voice: 'sage' });
    expect(result.audio.equals(WAV)).toBe(true);
    expect(result.cached).toBe(false);
  }
  // Nothing was kept, so each request was a call; each failed write was counted and said.
  expect(calls).toBe(3);
  expect(client.cacheFailures()).toEqual({ read: 0, write: 3, sweep: 0 });
  expect(logged).toHaveLength(3);
  for (const line of logged) {
    expect(JSON.parse(line)).toMatchObject({
      level: 40,
      what: 'write',
      msg: 'the TTS cache could not write a body',
      error: expect.stringContaining('ENOTDIR') as unknown,
    });
    expect(line).not.toContain(TOKEN);
    expect(line).not.toContain('unkept words');
  }
});

it('12a. two hosts asking at once make one provider call', async () => {
  const store = folder();
  const [a, b] = [await storeHost(store), await storeHost(store)];
  const answers = await Promise.all([
    a.tts({ text: 'asked at once', voice: 'sage' }),
    b.tts({ text: 'asked at once', voice: 'sage' }),
  ]);
  for (const answer of answers) expect(answer.audio.equals(WAV)).toBe(true);
  expect(calls).toBe(1);
});

it('12b. two hosts asking in turn, six times, make one provider call', async () => {
  const store = folder();
  const hosts = [await storeHost(store), await storeHost(store)];
  const cached: boolean[] = [];
  for (let i = 0; i < 6; i++) {
    const answer = await hosts[i % 2]!.tts({ text: 'asked in turn', voice: 'sage' });
    expect(answer.audio.equals(WAV)).toBe(true);
    cached.push(answer.cached);
  }
  expect(calls).toBe(1);
  expect(cached).toEqual([false, true, true, true, true, true]);
  // One body, in the store's cache folder, filed by the hour it was written.
  const hours = readdirSync(join(store, '.archive', 'tts-cache'));
  expect(hours).toHaveLength(1);
  expect(readdirSync(join(store, '.archive', 'tts-cache', hours[0]!))).toHaveLength(1);
});
