import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CreateBucketCommand,
  GetBucketLifecycleConfigurationCommand,
  type BucketLifecycleConfiguration,
  PutBucketLifecycleConfigurationCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { freePort } from '../../harness/private-redis';
import { startCephGateway, type CephGateway } from '../../src/dev/ceph-gateway';
import { audio, startLocalCdn, type LocalCdn, type Route } from '../../harness/local-cdn';
import { deliveredBy, eventually, startSandboxProcess } from '../../harness/sandbox-process';
import { downloadsFrom, serviceSettings } from '../helpers/service-settings';
import { spawnService } from '../helpers/spawn-service';
import { startTestPipeline } from '../helpers/test-pipeline';
import { createTestReceiver, signed } from '../helpers/test-receiver';
import request from 'supertest';
import { createArchive } from '../../src/archive/archive';
import { createS3AudioStore } from '../../src/storage/s3/s3-audio-store';
import { hookCalls, recordingHooksBuild, runCliProcess } from '../helpers/replay-app';

// AUDIO_STORE=s3 against a real S3 server: Ceph's RADOS Gateway on a one-node cluster.
let gateway: CephGateway;
let client: S3Client;
let cdn: LocalCdn;
const saved = { ...process.env };

beforeAll(async () => {
  gateway = await startCephGateway();
  // The SDK's default credential chain, as in production: the in-process workers read these.
  Object.assign(process.env, gateway.env);
  client = gateway.client();
  cdn = await startLocalCdn();
}, 120_000);
afterAll(async () => {
  process.env = saved;
  // Each is unset when beforeAll failed before it (a gateway that did not start).
  (client as S3Client | undefined)?.destroy();
  await (cdn as LocalCdn | undefined)?.close();
  await (gateway as CephGateway | undefined)?.stop();
});

async function newBucket(): Promise<string> {
  const bucket = `aw-${randomUUID()}`;
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
  return bucket;
}

async function object(bucket: string, key: string): Promise<Buffer> {
  const answer = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return Buffer.from(await answer.Body!.transformToByteArray());
}

async function exists(bucket: string, key: string): Promise<boolean> {
  try {
    await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
    return true;
  } catch {
    return false;
  }
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** An audio.ready delivery of `id` whose audio the local CDN serves at `path`. */
const ready = (id: string, path: string) => ({
  event: 'audio.ready',
  data: {
    id,
    kind: 'tts',
    audio_url: `${cdn.origin}${path}`,
    voice: 'alloy',
    created_at: '2026-11-23T10:00:00Z',
  },
});

/** A service (and its CLI) storing into `bucket` under audio/, on a queue of its own. */
function serviceEnv(bucket: string, secret: string): Record<string, string> {
  return serviceSettings({
    ...gateway.env,
    S3_BUCKET: bucket,
    S3_PREFIX: 'audio/',
    WEBHOOK_SECRETS: secret,
  });
}

function pipelineEnv(bucket: string, extra: Record<string, string> = {}) {
  return {
    ...gateway.env,
    S3_BUCKET: bucket,
    S3_PREFIX: 'audio/',
    CDN_URL: cdn.origin,
    DOWNLOAD_ALLOW_PRIVATE_IPS: 'true',
    ...extra,
  };
}

it('the whole loop: a sandbox batch → receiver → worker → bucket; every object and its metadata sha256 match the file the sandbox served', async () => {
  const bucket = await newBucket();
  const secret = 'whsec_s3_loop';
  const port = await freePort();
  const sbx = await startSandboxProcess({
    flags: { 'time-scale': '0.001', 'webhook-url': `http://127.0.0.1:${port}/webhooks` },
    env: { WEBHOOK_SECRETS: secret },
  });
  const service = spawnService({ ...serviceEnv(bucket, secret), ...deliveredBy(sbx, port) });
  try {
    await service.waitForLog('audio-webhooks started');
    const items = Array.from({ length: 20 }, (_unused, i) => ({
      id: `loop-${i}`,
      text: `item ${i}`,
      voice: 'alloy',
    }));
    const batch = await sbx.call('POST', '/v1/tts/batch', { items }, sbx.info.key.token);
    expect(batch.status).toBe(202);
    await eventually(
      async () => {
        const all = await Promise.all(items.map((item) => exists(bucket, `audio/${item.id}.json`)));
        return all.every(Boolean) ? true : undefined;
      },
      { timeoutMs: 60_000, everyMs: 250 },
    );
    for (const item of items) {
      const metadata = JSON.parse((await object(bucket, `audio/${item.id}.json`)).toString()) as {
        id: string;
        file: string;
        sha256: string;
        bytes: number;
        audio_url: string;
      };
      const served = readFileSync(
        join(sbx.dir, 'audio', new URL(metadata.audio_url).pathname.slice('/audio/'.length)),
      );
      const stored = await object(bucket, `audio/${metadata.file}`);
      expect(metadata).toMatchObject({ id: item.id, file: `${item.id}.wav`, bytes: served.length });
      expect(stored.equals(served)).toBe(true);
      expect(metadata.sha256).toBe(sha256(served));
    }
  } finally {
    service.child.kill('SIGTERM');
    await service.exited;
    await sbx.stop();
  }
}, 120_000);

it("two ids whose audio differ never share an object; a duplicate delivery leaves the object unchanged; another item's object is never replaced", async () => {
  const bucket = await newBucket();
  const one = randomBytes(1000);
  const two = randomBytes(2000);
  cdn.route('/one.wav', audio(one, 'audio/wav'));
  cdn.route('/two.wav', audio(two, 'audio/wav'));
  // An object already under the name id `taken` maps to, recorded as another item's.
  const taken = randomBytes(10);
  await client.send(
    new PutObjectCommand({
      Bucket: bucket,
      Key: 'audio/taken.wav',
      Body: taken,
      Metadata: { 'item-id': 'someone-else' },
    }),
  );
  const p = await startTestPipeline(pipelineEnv(bucket), cdn.ca);
  try {
    await p.post(ready('a', '/one.wav')).expect(202);
    await p.post(ready('b', '/two.wav')).expect(202);
    expect(await p.settled('a')).toMatchObject({ state: 'completed' });
    expect(await p.settled('b')).toMatchObject({ state: 'completed' });
    expect((await object(bucket, 'audio/a.wav')).equals(one)).toBe(true);
    expect((await object(bucket, 'audio/b.wav')).equals(two)).toBe(true);

    const before = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: 'audio/a.wav' }));
    await p.post(ready('a', '/two.wav')).expect(200, { received: true, duplicate: true });
    const after = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: 'audio/a.wav' }));
    expect(after.ETag).toBe(before.ETag);
    expect((await object(bucket, 'audio/a.wav')).equals(one)).toBe(true);

    await p.post(ready('taken', '/one.wav')).expect(202);
    expect(await p.settled('taken')).toEqual({
      state: 'failed',
      reason: expect.stringMatching(
        /^file name collision: taken\.wav already holds the audio of id "someone-else"/,
      ),
    });
    expect((await object(bucket, 'audio/taken.wav')).equals(taken)).toBe(true);
  } finally {
    await p.close();
  }
});

/** A worker process (ROLE=worker) on the bucket, as production runs one, and a receiver for it. */
async function s3Worker(bucket: string, env: Record<string, string> = {}) {
  const caFile = join(mkdtempSync(join(tmpdir(), 'aw-ca-')), 'ca.pem');
  writeFileSync(caFile, cdn.ca);
  const receiver = await createTestReceiver();
  const workerEnv = serviceSettings({
    ...gateway.env,
    S3_BUCKET: bucket,
    S3_PREFIX: 'audio/',
    QUEUE_PREFIX: receiver.config.queuePrefix,
    ROLE: 'worker',
    ...downloadsFrom(cdn.origin, caFile),
    DOWNLOAD_BACKOFF_MS: '200',
    ...env,
  });
  const post = (id: string, path: string) => {
    const { raw, headers } = signed(ready(id, path));
    return request(receiver.listener).post('/webhooks').set(headers).send(raw).expect(202);
  };
  return { receiver, post, start: () => spawnService(workerEnv) };
}

/** Resident and peak resident memory of a process, in bytes (Linux /proc). */
function memoryOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]) * 1024;
  return { rss: kb('VmRSS'), peak: kb('VmHWM') };
}

/** Serves `body` in 1 MB writes, each `everyMs` apart; without a content-length when `chunked`. */
function served(
  body: Buffer,
  { chunked, everyMs = 0 }: { chunked: boolean; everyMs?: number },
): { route: Route; sent: () => number } {
  let at = 0;
  const route: Route = (_req, res) => {
    res.writeHead(200, {
      'content-type': 'audio/wav',
      ...(chunked ? {} : { 'content-length': body.length }),
    });
    at = 0;
    const next = () => {
      if (res.destroyed) return;
      if (at >= body.length) {
        res.end();
        return;
      }
      const more = res.write(body.subarray(at, at + 1024 * 1024));
      at += 1024 * 1024;
      if (everyMs > 0) setTimeout(next, everyMs);
      else if (more) setImmediate(next);
      else res.once('drain', next);
    };
    next();
  };
  return { route, sent: () => at };
}

// The CDN declares a file's length (content-length) almost always: then one PUT streams it, as
// `curl -T` sends a file; without it, a multipart upload of 8 MiB parts.
const LARGE_PATHS = [
  ['with a content-length: one streamed PUT', false],
  ['without one (chunked): a multipart upload', true],
] as const;

it.each(LARGE_PATHS)(
  'a 64 MB file %s, whole under its key, nothing left incomplete; the worker process grows by a few MB, not the file',
  async (_path, chunked) => {
    const bucket = await newBucket();
    const big = randomBytes(64 * 1024 * 1024);
    cdn.route('/big.wav', served(big, { chunked }).route);
    // Young-generation garbage (TLS records) collected early, so that the peak shows what is held
    // rather than when V8 chose to collect.
    const { receiver, post, start } = await s3Worker(bucket, {
      NODE_OPTIONS: '--max-semi-space-size=1',
    });
    const worker = start();
    try {
      await worker.waitForLog('audio-webhooks started');
      const before = memoryOf(worker.child.pid!);
      await post('big', '/big.wav');
      await worker.waitForLog('audio downloaded');
      const after = memoryOf(worker.child.pid!);
      const head = await client.send(
        new HeadObjectCommand({ Bucket: bucket, Key: 'audio/big.wav' }),
      );
      // A multipart object's ETag ends in "-<parts>": 64 MB in 8 MiB parts; a PUT's has no dash.
      if (chunked) expect(head.ETag).toMatch(/-8"$/);
      else expect(head.ETag).toMatch(/^"[0-9a-f]{32}"$/);
      expect(head.ContentLength).toBe(big.length);
      expect(sha256(await object(bucket, 'audio/big.wav'))).toBe(sha256(big));
      const left = await client.send(new ListMultipartUploadsCommand({ Bucket: bucket }));
      expect(left.Uploads ?? []).toEqual([]);
      const growthMb = (after.peak - before.rss) / 1024 / 1024;
      process.stdout.write(
        `64 MB into S3 ${chunked ? 'by multipart upload' : 'by one PUT'}: the worker's peak RSS grew by ${growthMb.toFixed(1)} MB\n`,
      );
      // The download alone grows a worker by about 60 MB whatever the size (TLS records awaiting
      // GC, docs/performance.md); a multipart upload adds its two 8 MiB part buffers (the part
      // sent and the one being filled): 48–90 MB measured, the high end under the whole suite's
      // load. The file held whole, once as the body and again as an upload's copy, would put
      // 128 MB on top.
      expect(growthMb).toBeLessThan(120);
    } finally {
      worker.child.kill('SIGTERM');
      await worker.exited;
      await receiver.close();
    }
  },
  60_000,
);

it.each(LARGE_PATHS)(
  'the worker SIGKILLed mid-upload %s: nothing under the final key; after a restart the audio is stored whole, once',
  async (_path, chunked) => {
    const bucket = await newBucket();
    const big = randomBytes(48 * 1024 * 1024);
    // Served slowly: 1 MB every 50 ms, so the kill lands in the middle of the upload.
    const slow = served(big, { chunked, everyMs: 50 });
    cdn.route('/slow.wav', slow.route);
    const { receiver, post, start } = await s3Worker(bucket, {
      WORKER_LOCK_MS: '2000',
      WORKER_STALL_MS: '70000',
    });
    let worker = start();
    try {
      await worker.waitForLog('audio-webhooks started');
      await post('killed', '/slow.wav');
      // Past the first 8 MiB, which are read before either kind of upload starts.
      await eventually(() => Promise.resolve(slow.sent() >= 16 * 1024 * 1024 ? true : undefined), {
        timeoutMs: 20_000,
        everyMs: 50,
      });
      const uploading = async () =>
        (
          (await client.send(new ListMultipartUploadsCommand({ Bucket: bucket }))).Uploads ?? []
        ).map((u) => u.Key);
      // A multipart upload is listed while it runs (the worker may read the sent bytes later than
      // they are sent: it is awaited); a PUT is not there at all until whole.
      if (chunked)
        await eventually(async () => ((await uploading()).length > 0 ? true : undefined), {
          timeoutMs: 20_000,
          everyMs: 50,
        });
      expect(await uploading()).toEqual(chunked ? ['audio/killed.wav'] : []);
      worker.child.kill('SIGKILL');
      await worker.exited;
      expect(await exists(bucket, 'audio/killed.wav')).toBe(false);
      expect(await exists(bucket, 'audio/killed.json')).toBe(false);

      worker = start();
      await worker.waitForLog('audio downloaded');
      expect(sha256(await object(bucket, 'audio/killed.wav'))).toBe(sha256(big));
      const metadata = JSON.parse((await object(bucket, 'audio/killed.json')).toString()) as {
        sha256: string;
      };
      expect(metadata.sha256).toBe(sha256(big));
      // What the SIGKILL left: a multipart upload's incomplete upload, invisible under any key (a
      // worker starting an hour later aborts it, and so does the bucket's lifecycle rule); a
      // PUT's, nothing.
      const left = await client.send(new ListMultipartUploadsCommand({ Bucket: bucket }));
      process.stdout.write(
        `SIGKILL mid-upload ${chunked ? '(multipart)' : '(one PUT)'} left ${left.Uploads?.length ?? 0} incomplete upload(s), nothing under a final key\n`,
      );
      if (!chunked) expect(left.Uploads ?? []).toEqual([]);
      expect(worker.logs.filter((line) => line.msg === 'audio downloaded')).toHaveLength(1);
    } finally {
      worker.child.kill('SIGTERM');
      await worker.exited;
      await receiver.close();
    }
  },
  90_000,
);

it('the gateway stopped for a few seconds under load, then back: every item stored, none failed', async () => {
  const bucket = await newBucket();
  const bytes = randomBytes(64 * 1024);
  cdn.route('/load.wav', audio(bytes, 'audio/wav'));
  const p = await startTestPipeline(pipelineEnv(bucket, { DOWNLOAD_BACKOFF_MS: '500' }), cdn.ca);
  try {
    const ids = Array.from({ length: 60 }, (_unused, i) => `load-${i}`);
    const send = (id: string) => p.post(ready(id, '/load.wav')).expect(202);
    for (const id of ids.slice(0, 20)) await send(id);
    await p.settled('load-5');
    await gateway.stopGateway();
    for (const id of ids.slice(20)) await send(id);
    await new Promise((resolve) => setTimeout(resolve, 3_000)); // the outage itself
    await gateway.startGateway();
    const outcomes = await Promise.all(ids.map((id) => p.settled(id)));
    expect(outcomes.filter((o) => o.state !== 'completed')).toEqual([]);
    for (const id of ids)
      expect((await object(bucket, `audio/${id}.wav`)).equals(bytes)).toBe(true);
  } finally {
    await p.close();
  }
}, 120_000);

it("hooks' store.read streams the object from the bucket", async () => {
  const bucket = await newBucket();
  const bytes = randomBytes(5000);
  cdn.route('/hooked.wav', audio(bytes, 'audio/wav'));
  const read: Buffer[] = [];
  const p = await startTestPipeline(
    pipelineEnv(bucket),
    cdn.ca,
    {},
    {
      hooks: {
        async audioReady(_event, stored, { store }) {
          const chunks: Buffer[] = [];
          for await (const chunk of store.read(stored.file)) chunks.push(Buffer.from(chunk));
          read.push(Buffer.concat(chunks));
        },
      },
    },
  );
  try {
    await p.post(ready('hooked', '/hooked.wav')).expect(202);
    expect(await p.settled('hooked')).toMatchObject({ state: 'completed' });
    expect(read).toHaveLength(1);
    expect(read[0]?.equals(bytes)).toBe(true);
  } finally {
    await p.close();
  }
});

it('deploy/overlays/s3/lifecycle.json applies to the gateway as one configuration, and every rule reads back', async () => {
  const bucket = await newBucket();
  const file = join(__dirname, '..', '..', 'deploy', 'overlays', 's3', 'lifecycle.json');
  const rules =
    (JSON.parse(readFileSync(file, 'utf8')) as BucketLifecycleConfiguration).Rules ?? [];
  await client.send(
    new PutBucketLifecycleConfigurationCommand({
      Bucket: bucket,
      LifecycleConfiguration: { Rules: rules },
    }),
  );
  const read = await client.send(new GetBucketLifecycleConfigurationCommand({ Bucket: bucket }));
  const byId = new Map((read.Rules ?? []).map((rule) => [rule.ID, rule]));
  expect([...byId.keys()].sort()).toEqual([
    'audio-webhooks-abort-incomplete-uploads',
    'audio-webhooks-archive',
  ]);
  expect(byId.get('audio-webhooks-abort-incomplete-uploads')).toMatchObject({
    Status: 'Enabled',
    AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 },
  });
  expect(byId.get('audio-webhooks-archive')).toMatchObject({
    Status: 'Enabled',
    Expiration: { Days: 8 },
  });
});

describe('start-up refusals: one line naming S3_BUCKET and S3_ENDPOINT, exit 1', () => {
  const startWorker = (env: Record<string, string>) =>
    spawnService(serviceSettings({ ...gateway.env, ROLE: 'worker', ...env }));

  it('a bucket that does not exist', async () => {
    const worker = startWorker({ S3_BUCKET: 'no-such-bucket' });
    expect(await worker.exited).toBe(1);
    expect(worker.stderr()).toBe(
      `audio-webhooks: S3_BUCKET no-such-bucket at S3_ENDPOINT ${gateway.endpoint}: the bucket does not exist\n`,
    );
  });

  it('a wrong secret key', async () => {
    const bucket = await newBucket();
    const worker = startWorker({ S3_BUCKET: bucket, AWS_SECRET_ACCESS_KEY: 'not-the-secret' });
    expect(await worker.exited).toBe(1);
    expect(worker.stderr()).toBe(
      `audio-webhooks: S3_BUCKET ${bucket} at S3_ENDPOINT ${gateway.endpoint}: refused (403): check the credentials and the bucket policy\n`,
    );
  });

  it('no credentials at all: said as such, not "unreachable"', async () => {
    const bucket = await newBucket();
    const env: Record<string, string> = { ...gateway.env };
    delete env.AWS_ACCESS_KEY_ID;
    delete env.AWS_SECRET_ACCESS_KEY;
    const worker = spawnService(
      serviceSettings({
        ...env,
        ROLE: 'worker',
        S3_BUCKET: bucket,
        // No profile to find, and no instance metadata asked for (no address off this machine).
        HOME: mkdtempSync(join(tmpdir(), 'aw-no-aws-')),
        AWS_EC2_METADATA_DISABLED: 'true',
      }),
    );
    expect(await worker.exited).toBe(1);
    expect(worker.stderr()).toMatch(
      new RegExp(
        `^audio-webhooks: S3_BUCKET ${bucket} at S3_ENDPOINT ${gateway.endpoint.replace(/\./g, '\\.')}: no credentials: the AWS SDK found none \\(AWS_ACCESS_KEY_ID .+\\)\\n$`,
      ),
    );
  }, 30_000);

  it('an endpoint nothing answers on', async () => {
    const port = await freePort();
    const worker = startWorker({ S3_BUCKET: 'any', S3_ENDPOINT: `http://127.0.0.1:${port}` });
    expect(await worker.exited).toBe(1);
    expect(worker.stderr()).toMatch(
      new RegExp(
        `^audio-webhooks: S3_BUCKET any at S3_ENDPOINT http://127\\.0\\.0\\.1:${port}: unreachable: .+\\n$`,
      ),
    );
  }, 30_000);
});

describe('replay with the S3 store (the archive under <S3_PREFIX>.archive/)', () => {
  const secret = 'whsec_s3_replay';
  let build: { main: string; dir: string };
  beforeAll(() => {
    build = recordingHooksBuild();
  });
  afterAll(() => {
    rmSync(build.dir, { recursive: true, force: true });
  });

  /** The service with recording hooks, a sandbox delivering to it, and the CLI's environment. */
  async function startApp() {
    const bucket = await newBucket();
    const port = await freePort();
    const hookLog = join(mkdtempSync(join(tmpdir(), 'aw-s3-hooks-')), 'hooks.ndjson');
    const sbx = await startSandboxProcess({
      flags: { 'time-scale': '0.001', 'webhook-url': `http://127.0.0.1:${port}/webhooks` },
      env: { WEBHOOK_SECRETS: secret },
    });
    const cliEnv = serviceEnv(bucket, secret);
    const service = spawnService(
      {
        ...cliEnv,
        ...deliveredBy(sbx, port),
        HOOK_LOG: hookLog,
      },
      { main: build.main },
    );
    await service.waitForLog('audio-webhooks started');
    const ids = ['one', 'two', 'three'].map((name) => `${name}-${randomUUID().slice(0, 8)}`);
    const items = ids.map((id) => ({ id, text: `text of ${id}`, voice: 'alloy' }));
    expect((await sbx.call('POST', '/v1/tts/batch', { items }, sbx.info.key.token)).status).toBe(
      202,
    );
    const archived = () => entries(bucket, 'audio/.archive/');
    await eventually(
      async () =>
        hookCalls(hookLog).length === 3 && (await archived()).length === 3 ? true : undefined,
      { timeoutMs: 60_000, everyMs: 250 },
    );
    return {
      bucket,
      ids,
      hookLog,
      cliEnv,
      archived,
      async stop() {
        service.child.kill('SIGTERM');
        await service.exited;
        await sbx.stop();
      },
    };
  }

  async function keys(bucket: string, prefix: string): Promise<string[]> {
    const listed = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix }));
    return (listed.Contents ?? []).flatMap((entry) => (entry.Key === undefined ? [] : [entry.Key]));
  }

  /** The archive's entries, read straight from its objects (batches: a line each). */
  async function entries(bucket: string, prefix: string): Promise<Record<string, unknown>[]> {
    const texts = await Promise.all(
      (await keys(bucket, prefix)).map(async (key) => (await object(bucket, key)).toString()),
    );
    return texts
      .flatMap((text) => text.split('\n'))
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  }

  it('replay --id brings back a deleted object and its metadata, byte-identical; the hooks know it is a replay', async () => {
    const app = await startApp();
    try {
      const [, target = ''] = app.ids;
      const before = await object(app.bucket, `audio/${target}.wav`);
      const metadata = JSON.parse(
        (await object(app.bucket, `audio/${target}.json`)).toString(),
      ) as Record<string, unknown>;
      await client.send(
        new DeleteObjectCommand({ Bucket: app.bucket, Key: `audio/${target}.wav` }),
      );
      await client.send(
        new DeleteObjectCommand({ Bucket: app.bucket, Key: `audio/${target}.json` }),
      );

      const replay = await runCliProcess(['replay', '--id', target], app.cliEnv);
      expect(replay).toMatchObject({ code: 0, stdout: '1 delivery put on the queue again\n' });
      await eventually(
        () => Promise.resolve(hookCalls(app.hookLog).length === 4 ? true : undefined),
        { timeoutMs: 60_000, everyMs: 250 },
      );
      expect((await object(app.bucket, `audio/${target}.wav`)).equals(before)).toBe(true);
      const after = JSON.parse(
        (await object(app.bucket, `audio/${target}.json`)).toString(),
      ) as Record<string, unknown>;
      for (const field of ['id', 'file', 'bytes', 'sha256', 'audio_url', 'received_at'])
        expect(after[field]).toEqual(metadata[field]);
      expect(
        hookCalls(app.hookLog)
          .filter((call) => call.id === target)
          .map((call) => call.replay),
      ).toEqual([false, true]);
      expect(await app.archived()).toHaveLength(3);
    } finally {
      await app.stop();
    }
  }, 120_000);

  it('--since 10m --event audio.ready --dry-run --json lists exactly the archived objects and changes nothing', async () => {
    const app = await startApp();
    try {
      const archived = await app.archived();
      const everything = await keys(app.bucket, '');
      const listed = await runCliProcess(
        ['replay', '--since', '10m', '--event', 'audio.ready', '--dry-run', '--json'],
        app.cliEnv,
      );
      expect(listed).toMatchObject({ code: 0, stderr: '' });
      // Inside an hour, in the order the store lists: by item, not by time.
      const byTime = (a: { received_at: unknown }, b: { received_at: unknown }) =>
        String(a.received_at).localeCompare(String(b.received_at));
      expect((JSON.parse(listed.stdout) as { received_at: unknown }[]).sort(byTime)).toEqual(
        archived
          .map((entry) => ({ event: entry.event, id: entry.id, received_at: entry.received_at }))
          .sort(byTime),
      );
      expect(await keys(app.bucket, '')).toEqual(everything);
      expect(hookCalls(app.hookLog)).toHaveLength(3);
    } finally {
      await app.stop();
    }
  }, 120_000);

  it('the sweep removes the expired hours from the bucket and keeps the rest', async () => {
    const bucket = await newBucket();
    const store = createS3AudioStore({
      s3Bucket: bucket,
      s3Prefix: 'audio/',
      s3Endpoint: gateway.endpoint,
      s3Region: 'us-east-1',
      s3ForcePathStyle: true,
    });
    const archive = createArchive(store.files);
    const hoursAgo = (hours: number) => new Date(Date.now() - hours * 3600_000).toISOString();
    for (const [id, hours] of [
      ['old', 30],
      ['older', 3],
      ['recent', 0.1],
    ] as const)
      await archive.record({
        delivery: { event: 'audio.failed', data: { id } },
        jobId: randomUUID(),
        receivedAt: hoursAgo(hours),
      });
    expect(await archive.sweep(2)).toHaveLength(2);
    const left = await keys(bucket, 'audio/.archive/');
    expect(left).toHaveLength(1);
    expect(left[0]).toMatch(/\/~batches\/[^/]+\.ndjson$/);
    expect((await object(bucket, left[0] ?? '')).toString()).toContain('"id":"recent"');
  });
});

it('each object carries its content type: the audio the one the CDN sent (one PUT, a streamed PUT, a multipart upload), the metadata application/json', async () => {
  const bucket = await newBucket();
  // Past a part (8 MiB): with a content-length one streamed PUT, without one a multipart upload.
  const large = randomBytes(9 * 1024 * 1024);
  cdn.route('/small.ogg', audio(randomBytes(1000), 'audio/ogg'));
  cdn.route('/streamed.wav', served(large, { chunked: false }).route);
  cdn.route('/parts.wav', served(large, { chunked: true }).route);
  const items = [
    { id: 'small', path: '/small.ogg', key: 'audio/small.ogg', type: 'audio/ogg' },
    { id: 'streamed', path: '/streamed.wav', key: 'audio/streamed.wav', type: 'audio/wav' },
    { id: 'parts', path: '/parts.wav', key: 'audio/parts.wav', type: 'audio/wav' },
  ];
  const typeOf = async (key: string) =>
    (await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }))).ContentType;
  const p = await startTestPipeline(pipelineEnv(bucket), cdn.ca);
  try {
    for (const { id, path } of items) await p.post(ready(id, path)).expect(202);
    for (const { id, key, type } of items) {
      expect(await p.settled(id)).toMatchObject({ state: 'completed' });
      const metadata = JSON.parse((await object(bucket, `audio/${id}.json`)).toString()) as {
        content_type: string;
      };
      expect({ id, audio: await typeOf(key), recorded: metadata.content_type }).toEqual({
        id,
        audio: type,
        recorded: type,
      });
      expect(await typeOf(`audio/${id}.json`)).toBe('application/json');
    }
  } finally {
    await p.close();
  }
}, 60_000);
