import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { watch } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { jobItemId } from '../../src/queue/delivery-job-data';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';
import { startLocalCdn, type LocalCdn } from '../../harness/local-cdn';
import { freePort } from '../../harness/private-redis';
import { downloadsFrom, serviceSettings } from '../helpers/service-settings';
import { spawnService } from '../helpers/spawn-service';
import {
  deleteKeys,
  signed,
  createTestReceiver,
  type TestReceiver,
} from '../helpers/test-receiver';
import request from 'supertest';
import { audioDirEntries } from '../helpers/audio-dir';

const prefix = `test-${randomUUID()}`;
let cdn: LocalCdn;
let receiver: TestReceiver;
const redis = new Redis(process.env.REDIS_URL ?? '');

beforeAll(async () => {
  cdn = await startLocalCdn();
  receiver = await createTestReceiver({ QUEUE_PREFIX: prefix });
});
afterAll(async () => {
  await cdn.close();
  await receiver.close();
  await deleteKeys(redis, `${prefix}:*`);
  redis.disconnect();
});

/** Resolves once a file matching `test` exists in `dir` (fs.watch: no polling). */
async function fileAppears(dir: string, test: (name: string) => boolean): Promise<void> {
  const stop = new AbortController();
  const watcher = watch(dir, { signal: stop.signal });
  try {
    if (readdirSync(dir).some(test)) return;
    for await (const { filename } of watcher) if (filename !== null && test(filename)) return;
  } finally {
    stop.abort();
  }
}

/** A worker process's environment: the local CDN trusted, files in `audioDir`. */
function workerEnv(audioDir: string): Record<string, string> {
  const caFile = join(mkdtempSync(join(tmpdir(), 'aw-ca-')), 'ca.pem');
  writeFileSync(caFile, cdn.ca);
  return serviceSettings({
    QUEUE_PREFIX: prefix,
    ROLE: 'worker',
    AUDIO_DIR: audioDir,
    ...downloadsFrom(cdn.origin),
    NODE_EXTRA_CA_CERTS: caFile,
    // A short lock so a dead worker's job is taken over within seconds, not 30.
    WORKER_LOCK_MS: '1500',
  });
}

it('a worker killed with SIGKILL mid-download: a new worker completes the job and the file is whole', async () => {
  const audioDir = mkdtempSync(join(tmpdir(), 'aw-crash-'));
  const bytes = randomBytes(2_000_000);
  cdn.route('/big.mp3', (_req, res, hit) => {
    res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': bytes.length });
    if (hit === 1) {
      // Half the file, then silence: the worker is certainly mid-download when it is killed.
      res.write(bytes.subarray(0, 1_000_000));
    } else {
      res.end(bytes);
    }
  });
  const env = workerEnv(audioDir);

  const first = spawnService(env);
  await first.waitForLog('audio-webhooks started');
  const { raw, headers } = signed(
    sampleDelivery('audio.ready', { id: 'big', data: { audio_url: `${cdn.origin}/big.mp3` } }),
  );
  await request(receiver.listener).post('/webhooks').set(headers).send(raw).expect(202);
  await fileAppears(audioDir, (name) => name.startsWith('.partial-'));
  first.child.kill('SIGKILL');
  await first.exited;

  // Should a wait below fail, spawn-service.ts kills what this test spawned.
  const second = spawnService(env);
  const removed = await second.waitForLog('removed partial downloads left by a killed process');
  expect(removed.removed).toHaveLength(1);
  await second.waitForLog('audio downloaded');
  second.child.kill('SIGTERM');
  expect(await second.exited).toBe(0);
  expect(audioDirEntries(audioDir)).toEqual(['big.json', 'big.mp3']);
  expect(readFileSync(join(audioDir, 'big.mp3')).equals(bytes)).toBe(true);
  const metadata = JSON.parse(readFileSync(join(audioDir, 'big.json'), 'utf8')) as {
    sha256: string;
  };
  expect(metadata.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
  expect(cdn.hits.get('/big.mp3')).toBe(2);
});

it('a delivery whose worker is killed mid-download three times is stored by the fourth worker, not failed for stalls it did not cause', async () => {
  const audioDir = mkdtempSync(join(tmpdir(), 'aw-crash-'));
  const bytes = randomBytes(400_000);
  const halves: (() => void)[] = [];
  const halfSent = (hit: number) => new Promise<void>((resolve) => (halves[hit] = resolve));
  const sent = [1, 2, 3].map(halfSent);
  cdn.route('/thrice.mp3', (_req, res, hit) => {
    res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': bytes.length });
    // Half the file, then silence, to each of the three workers killed.
    if (hit <= 3) res.write(bytes.subarray(0, 200_000), () => halves[hit]?.());
    else res.end(bytes);
  });
  const env = workerEnv(audioDir);
  const { raw, headers } = signed(
    sampleDelivery('audio.ready', {
      id: 'thrice',
      data: { audio_url: `${cdn.origin}/thrice.mp3` },
    }),
  );
  await request(receiver.listener).post('/webhooks').set(headers).send(raw).expect(202);
  const [job] = await receiver.queue.getWaiting(0, 0);
  for (const halfway of sent) {
    const worker = spawnService(env);
    await halfway;
    worker.child.kill('SIGKILL');
    await worker.exited;
  }
  const fourth = spawnService(env);
  await fourth.waitForLog('audio downloaded');
  fourth.child.kill('SIGTERM');
  expect(await fourth.exited).toBe(0);
  expect(readFileSync(join(audioDir, 'thrice.mp3')).equals(bytes)).toBe(true);
  expect(cdn.hits.get('/thrice.mp3')).toBe(4);
  expect(await receiver.queue.getJobState(String(job?.id))).toBe('completed');
}, 60_000);

it('ROLE=all given SIGTERM mid-download, past its shutdown deadline: it exits, another process takes the job over, and it completes exactly once', async () => {
  const audioDir = mkdtempSync(join(tmpdir(), 'aw-crash-'));
  const bytes = randomBytes(400_000);
  let halfSent: () => void = () => undefined;
  const halfway = new Promise<void>((resolve) => (halfSent = resolve));
  const open: (() => void)[] = [];
  cdn.route('/sigterm.mp3', (_req, res, hit) => {
    res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': bytes.length });
    if (hit === 1) {
      // Half the file, then silence until the test ends: the first run cannot finish.
      res.write(bytes.subarray(0, 200_000), halfSent);
      open.push(() => res.destroy());
    } else res.end(bytes);
  });
  const all = async () => {
    const port = await freePort();
    return spawnService({
      ...workerEnv(audioDir),
      ROLE: 'all',
      PORT: String(port),
      SHUTDOWN_TIMEOUT_MS: '2000',
    });
  };
  const first = await all();
  await first.waitForLog('audio-webhooks started');
  const { raw, headers } = signed(
    sampleDelivery('audio.ready', {
      id: 'sigterm',
      data: { audio_url: `${cdn.origin}/sigterm.mp3` },
    }),
  );
  await request(receiver.listener).post('/webhooks').set(headers).send(raw).expect(202);
  await halfway;
  first.child.kill('SIGTERM');
  // Past SHUTDOWN_TIMEOUT_MS with a job still running: exit 1, the job left to another worker.
  expect(await first.exited).toBe(1);

  const second = await all();
  await second.waitForLog('audio downloaded');
  second.child.kill('SIGTERM');
  expect(await second.exited).toBe(0);
  for (const close of open) close();
  expect(readFileSync(join(audioDir, 'sigterm.mp3')).equals(bytes)).toBe(true);
  expect(audioDirEntries(audioDir)).toEqual(['sigterm.json', 'sigterm.mp3']);
  expect(cdn.hits.get('/sigterm.mp3')).toBe(2);
  // Exactly one completion: one run said so, and the job is completed, not failed.
  const downloaded = [...first.logs, ...second.logs].filter((l) => l.msg === 'audio downloaded');
  expect(downloaded).toHaveLength(1);
  const jobs = await receiver.queue.getJobs(['completed', 'failed', 'active', 'wait', 'delayed']);
  const mine = jobs.filter((j) => jobItemId(j.data) === 'sigterm');
  expect(await Promise.all(mine.map((j) => j.getState()))).toEqual(['completed']);
}, 60_000);
