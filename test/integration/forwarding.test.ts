import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { request } from 'undici';
import { sampleDelivery } from '../../src/webhooks/sample-delivery';
import { eventually } from '../../src/util/eventually';
import {
  createJetStream,
  createRabbitQueue,
  forwardSecret,
  startHttpEndpoint,
  startPrivateNats,
  type HttpEndpoint,
  type Received,
} from '../helpers/forward-destinations';
import { audio, startLocalCdn, type LocalCdn } from '../helpers/local-cdn';
import { freePort } from '../helpers/private-redis';
import { deliveredBy, startSandboxProcess } from '../helpers/sandbox-process';
import { spawnService, type ServiceProcess } from '../helpers/spawn-service';
import { startTestPipeline, type TestPipeline } from '../helpers/test-pipeline';
import { deleteKeys, signed, TEST_SECRET } from '../helpers/test-receiver';

const redis = new Redis(process.env.REDIS_URL ?? '');
const cleanups: (() => Promise<unknown>)[] = [];
let cdn: LocalCdn;

beforeAll(async () => {
  cdn = await startLocalCdn();
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(async () => {
  await cdn.close();
  redis.disconnect();
});

/** A spawned service or worker, stopped and its keys removed after the test. */
function service(env: Record<string, string>, options?: Parameters<typeof spawnService>[1]) {
  const spawned = spawnService({ REDIS_URL: process.env.REDIS_URL ?? '', ...env }, options);
  cleanups.push(async () => {
    if (spawned.child.exitCode === null && spawned.child.signalCode === null) {
      spawned.child.kill('SIGTERM');
      await spawned.exited;
    }
  });
  return spawned;
}

function prefixed(): string {
  const prefix = `test-${randomUUID()}`;
  cleanups.push(() => deleteKeys(redis, `${prefix}:*`));
  return prefix;
}

/** Serves a distinct body at /<id>.mp3 on the local CDN. */
function item(id: string): Record<string, unknown> {
  cdn.route(`/${id}.mp3`, audio(randomBytes(2_000 + id.length)));
  return sampleDelivery('audio.ready', { id, cdnOrigin: cdn.origin });
}

async function post(port: number, body: unknown): Promise<number> {
  const { raw, headers } = signed(body);
  const answer = await request(`http://127.0.0.1:${port}/webhooks`, {
    method: 'POST',
    headers,
    body: raw,
  });
  await answer.body.dump();
  return answer.statusCode;
}

function stored(audioDir: string, id: string): { sha256: string; file: string; bytes: number } {
  return JSON.parse(readFileSync(join(audioDir, `${id}.json`), 'utf8')) as {
    sha256: string;
    file: string;
    bytes: number;
  };
}

const sorted = (values: string[]) => [...values].sort();

it('200 deliveries from the sandbox: 200 messages at an HTTP endpoint, a JetStream stream and a RabbitMQ queue, each sha256 the stored one, each item downloaded once', async () => {
  const secret = forwardSecret();
  const [endpoint, stream, rabbit] = await Promise.all([
    startHttpEndpoint(secret),
    createJetStream(),
    createRabbitQueue(),
  ]);
  cleanups.push(
    () => endpoint.close(),
    () => stream.close(),
    () => rabbit.close(),
  );
  const port = await freePort();
  const sbx = await startSandboxProcess({
    flags: { 'time-scale': '0.001', 'webhook-url': `http://127.0.0.1:${port}/webhooks` },
    env: { WEBHOOK_SECRETS: TEST_SECRET },
  });
  cleanups.push(() => sbx.stop());
  const prefix = prefixed();
  const audioDir = mkdtempSync(join(tmpdir(), 'aw-forward-'));
  const env = {
    ...deliveredBy(sbx, port),
    WEBHOOK_SECRETS: TEST_SECRET,
    AUDIO_DIR: audioDir,
    QUEUE_PREFIX: prefix,
    FORWARD_URLS: [endpoint.url, stream.url, rabbit.url].join(','),
    FORWARD_SECRET: secret,
  };
  // Two processes work the queues: the whole service and a second worker beside it.
  const all = service(env);
  const worker = service({ ...env, ROLE: 'worker' });
  await Promise.all([
    all.waitForLog('audio-webhooks started'),
    worker.waitForLog('audio-webhooks started'),
  ]);

  const items = Array.from({ length: 200 }, (_unused, i) => ({
    id: `fwd-${i}`,
    text: `item ${i}`,
    voice: 'alloy',
  }));
  const batch = await sbx.call('POST', '/v1/tts/batch', { items }, sbx.info.key.token);
  expect(batch.status).toBe(202);

  await Promise.all([
    endpoint.inbox.atLeast(200),
    stream.inbox.atLeast(200),
    rabbit.inbox.atLeast(200),
  ]);
  const wanted = sorted(items.map((i) => `audio.ready:${i.id}`));
  for (const inbox of [endpoint.inbox, stream.inbox, rabbit.inbox]) {
    expect(sorted([...new Set(inbox.ids())])).toEqual(wanted);
    for (const message of inbox.messages) {
      expect(message.id).toBe(`${message.body.type}:${message.body.id}`);
      const metadata = stored(audioDir, message.body.id);
      expect(message.body.stored).toEqual({
        name: metadata.file,
        bytes: metadata.bytes,
        sha256: metadata.sha256,
        content_type: 'audio/wav',
      });
    }
  }
  expect(endpoint.rejected).toEqual([]);
  expect(await stream.stored()).toBe(200);
  const hits = (await sbx.call('GET', '/sandbox/cdn-hits')).body as Record<string, number>;
  expect(Object.keys(hits)).toHaveLength(200);
  expect(new Set(Object.values(hits))).toEqual(new Set([1]));
  // Destinations are named without their credentials, in the logs and on /metrics.
  expect(JSON.stringify([...all.logs, ...worker.logs])).not.toContain('guest');
  const metrics = await request(`http://127.0.0.1:${port}/metrics`);
  const text = await metrics.body.text();
  expect(text).not.toContain('guest');
  const rabbitName = rabbit.url.replace('guest:guest@', '');
  expect(text).toMatch(
    new RegExp(
      `webhook_forwards_total\\{destination="${rabbitName.replace(/[.?*+^$()[\]{}|\\]/g, '\\$&')}",result="sent"\\} \\d+`,
    ),
  );
  expect(text).toMatch(/webhook_forward_queue_jobs\{state="waiting"\} 0/);
}, 120_000);
