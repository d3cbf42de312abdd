import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { destinationName } from '../../src/forwarding/settings/destinations';
import { jobItemId } from '../../src/queue/delivery-job-data';
import { createForwardQueue } from '../../src/forwarding/forward-queue';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';
import { eventually } from '../../src/util/eventually';
import { createRabbitQueue, startPrivateNats } from '../../harness/broker-destinations';
import {
  forwardSecret,
  startHttpEndpoint,
  startThreeDestinations,
  type HttpEndpoint,
} from '../../harness/forward-destinations';
import type { Received } from '../../harness/inbox';
import { audio } from '../../harness/local-cdn';
import { downloadsFrom } from '../helpers/service-settings';
import { deliverSigned, forwardTestBed } from '../helpers/forward-test-bed';
import { freePort } from '../../harness/private-redis';
import { deliveredBy, startSandboxProcess } from '../../harness/sandbox-process';
import { startTestPipeline, type TestPipeline } from '../helpers/test-pipeline';
import supertest from 'supertest';
import { createTestReceiver, deleteKeys, signed, TEST_SECRET } from '../helpers/test-receiver';

const bed = forwardTestBed();
const { redis, cleanups, service, prefixed } = bed;

/** The local CDN's certificate as a file, for a spawned worker's NODE_EXTRA_CA_CERTS. */
function caFile(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'aw-ca-')), 'ca.pem');
  writeFileSync(file, bed.cdn.ca);
  return file;
}

/** Serves a distinct body at /<id>.mp3 on the local CDN. */
function item(id: string): Record<string, unknown> {
  bed.cdn.route(`/${id}.mp3`, audio(randomBytes(2_000 + id.length)));
  return sampleDelivery('audio.ready', { id, cdnOrigin: bed.cdn.origin });
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
  const destinations = await startThreeDestinations();
  cleanups.push(() => destinations.close());
  const { endpoint, stream, rabbit } = destinations;
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
    AUDIO_DIR: audioDir,
    QUEUE_PREFIX: prefix,
    ...destinations.env,
  };
  // Two processes work the queues: the whole service and a second worker beside it.
  const all = service(env);
  const worker = service({ ...env, ROLE: 'worker' });
  await Promise.all([all.receiving(), worker.waitForLog('audio-webhooks started')]);

  const items = Array.from({ length: 200 }, (_unused, i) => ({
    id: `fwd-${i}`,
    text: `item ${i}`,
    voice: 'alloy',
  }));
  const batch = await sbx.call('POST', '/v1/tts/batch', { items }, sbx.info.key.token);
  expect(batch.status).toBe(202);

  const wanted = sorted(items.map((i) => `audio.ready:${i.id}`));
  await Promise.all(
    [endpoint.inbox, stream.inbox, rabbit.inbox].map((inbox) => inbox.holding(wanted, 90_000)),
  );
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
  const rabbitName = destinationName(new URL(rabbit.url));
  // Named by scheme, host, port and a hash: no path, vhost, exchange or routing key shown.
  expect(rabbitName).toMatch(/^amqp:\/\/127\.0\.0\.1:5672~[0-9a-f]{8}$/);
  expect(text).toMatch(
    new RegExp(
      `webhook_forwards_total\\{destination="${rabbitName.replace(/[.?*+^$()[\]{}|\\]/g, '\\$&')}",result="sent"\\} \\d+`,
    ),
  );
  expect(text).toMatch(/webhook_forward_queue_jobs\{state="waiting"\} 0/);
  expect(text).toMatch(/webhook_forward_backlog 0/);
}, 120_000);

it('a destination down for 10 s (a nats-server stopped, the HTTP endpoint answering 503): every message arrives once it is back, RabbitMQ is not held up, no audio downloaded twice', async () => {
  const nats = await startPrivateNats();
  cleanups.push(() => nats.stop());
  const destinations = await startThreeDestinations(nats.server, { consume: false });
  cleanups.push(() => destinations.close());
  const { endpoint, stream, rabbit } = destinations;
  const port = await freePort();
  const all = service({
    QUEUE_PREFIX: prefixed(),
    PORT: String(port),
    ...downloadsFrom(bed.cdn.origin),
    NODE_EXTRA_CA_CERTS: caFile(),
    ...destinations.env,
    FORWARD_BACKOFF_MS: '200',
    FORWARD_TIMEOUT_MS: '2000',
  });
  await all.receiving();

  await nats.stop();
  endpoint.failing = true;
  const down = Date.now();
  const ids = Array.from({ length: 20 }, () => `outage-${randomUUID()}`);
  for (const id of ids) expect(await deliverSigned(port, item(id))).toBe(202);
  // RabbitMQ has them all while the other two are still down.
  await rabbit.inbox.atLeast(20);
  expect(endpoint.requests).toBeGreaterThan(0);
  expect(endpoint.inbox.messages).toHaveLength(0);
  // The service saw the endpoint's 503s and holds its messages for a retry, not as sent.
  const endpointName = destinationName(new URL(endpoint.url)).replace(
    /[.?*+^$()[\]{}|\\]/g,
    '\\$&',
  );
  const forwards = async (result: string) => {
    const text = await (await request(`http://127.0.0.1:${port}/metrics`)).body.text();
    const found = new RegExp(
      `webhook_forwards_total\\{destination="${endpointName}",result="${result}"\\} (\\d+)`,
    ).exec(text);
    return Number(found?.[1] ?? 0);
  };
  await eventually(async () => ((await forwards('retrying')) > 0 ? true : undefined), {
    timeoutMs: 15_000,
  });
  expect(await forwards('sent')).toBe(0);

  // The outage is the scenario: 10 s of it, then both come back.
  await new Promise((resolve) => setTimeout(resolve, 10_000 - (Date.now() - down)));
  await nats.start();
  endpoint.failing = false;
  // A hang bound: each message's next try is its own backoff away, longer on a loaded machine.
  await endpoint.inbox.holding(
    ids.map((id) => `audio.ready:${id}`),
    60_000,
  );
  await eventually(async () => ((await stream.stored()) >= 20 ? true : undefined), {
    timeoutMs: 60_000,
  });

  const wanted = sorted(ids.map((id) => `audio.ready:${id}`));
  expect(sorted(rabbit.inbox.ids())).toEqual(wanted);
  expect(sorted(endpoint.inbox.ids())).toEqual(wanted);
  expect(sorted(await stream.read())).toEqual(wanted);
  for (const id of ids) expect(bed.cdn.hits.get(`/${id}.mp3`)).toBe(1);
}, 180_000);

it('a worker SIGKILLed after storing and before forwarding: the message is sent after the restart, the audio not fetched again', async () => {
  const rabbit = await createRabbitQueue();
  cleanups.push(() => rabbit.close());
  const env = {
    QUEUE_PREFIX: prefixed(),
    AUDIO_DIR: mkdtempSync(join(tmpdir(), 'aw-forward-')),
    ...downloadsFrom(bed.cdn.origin),
    NODE_EXTRA_CA_CERTS: caFile(),
    FORWARD_URLS: rabbit.url,
    // The dead worker's job is taken over within seconds.
    WORKER_LOCK_MS: '1500',
  };
  const receiver = await createTestReceiver({ QUEUE_PREFIX: env.QUEUE_PREFIX });
  cleanups.push(() => receiver.close());
  // A worker whose audio.ready hook (it runs after the audio and its metadata are stored, before
  // the message is queued) says so and holds: the moment to kill it.
  const holding = service(
    { ...env, ROLE: 'worker' },
    {
      command: [
        process.execPath,
        '-e',
        `const { loadConfig, startWorkers } = require(${JSON.stringify(join(__dirname, '..', '..', 'dist', 'index.js'))});
         const { createLogger } = require(${JSON.stringify(join(__dirname, '..', '..', 'dist', 'telemetry', 'logger.js'))});
         startWorkers(loadConfig(), createLogger('info'), { hooks: { audioReady: async () => {
           console.log(JSON.stringify({ msg: 'stored; holding before forwarding' }));
           await new Promise(() => undefined);
         } } });`,
      ],
    },
  );
  const id = `killed-${randomUUID()}`;
  const { raw, headers } = signed(item(id));
  await supertest(receiver.listener).post('/webhooks').set(headers).send(raw).expect(202);
  await holding.waitForLog('stored; holding before forwarding');
  expect(stored(env.AUDIO_DIR, id).bytes).toBeGreaterThan(0);
  holding.child.kill('SIGKILL');
  await holding.exited;
  expect(rabbit.inbox.messages).toHaveLength(0);

  const restarted = service({ ...env, ROLE: 'worker' });
  await rabbit.inbox.atLeast(1);
  expect(rabbit.inbox.ids()).toEqual([`audio.ready:${id}`]);
  expect(rabbit.inbox.messages[0]?.body.stored?.sha256).toBe(stored(env.AUDIO_DIR, id).sha256);
  expect(bed.cdn.hits.get(`/${id}.mp3`)).toBe(1);
  await restarted.waitForLog('audio already downloaded');
}, 60_000);

it('a forward whose worker is killed three times before the destination answers is sent by the next worker, not failed for stalls it did not cause', async () => {
  // Answers nothing to the first four requests (each worker holding one is killed), 204 after.
  let requests = 0;
  const waiting: { count: number; resolve: () => void }[] = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      requests += 1;
      if (requests > 4) res.writeHead(204).end();
      for (const waiter of waiting.filter((w) => requests >= w.count)) waiter.resolve();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
        server.closeAllConnections();
      }),
  );
  const request = (count: number) =>
    new Promise<void>((resolve) => {
      waiting.push({ count, resolve });
      if (requests >= count) resolve();
    });
  const env = {
    QUEUE_PREFIX: prefixed(),
    ROLE: 'worker',
    FORWARD_URLS: `http://127.0.0.1:${String((server.address() as AddressInfo).port)}/hook`,
    FORWARD_SECRET: forwardSecret(),
    FORWARD_TIMEOUT_MS: '60000',
    // The dead worker's job is taken over within seconds.
    WORKER_LOCK_MS: '1500',
  };
  const receiver = await createTestReceiver({ QUEUE_PREFIX: env.QUEUE_PREFIX });
  cleanups.push(() => receiver.close());
  const id = `stalled-${randomUUID()}`;
  const { raw, headers } = signed(sampleDelivery('audio.failed', { id }));
  await supertest(receiver.listener).post('/webhooks').set(headers).send(raw).expect(202);

  // Request 1 is the delivery job's own send, given up after a second and left to a forward
  // job; requests 2 to 4 are that job's, each in a worker killed while it waits: three stalls.
  let worker = service(env);
  for (const count of [2, 3, 4]) {
    await request(count);
    worker.child.kill('SIGKILL');
    await worker.exited;
    worker = service(env);
  }
  await request(5);
  const forwards = createForwardQueue(redis, env.QUEUE_PREFIX);
  cleanups.push(() => forwards.close());
  const deliveryJobId = await eventually(async () => (await receiver.queue.getCompleted())[0]?.id);
  // A forward sent to every destination is removed (what Redis keeps of a handled delivery is
  // bounded); one failed for good stays, for `retry`.
  const state = await eventually(async () => {
    const job = await forwards.getJob(`${deliveryJobId}.forward`);
    if (job === undefined) return 'sent';
    return (await job.getState()) === 'failed' ? 'failed' : undefined;
  });
  expect(state).toBe('sent');
  expect(requests).toBe(5);
}, 90_000);

describe('in one pipeline', () => {
  let pipeline: TestPipeline;
  let endpoint: HttpEndpoint;
  let rabbit: Awaited<ReturnType<typeof createRabbitQueue>>;

  beforeEach(async () => {
    const secret = forwardSecret();
    endpoint = await startHttpEndpoint(secret);
    rabbit = await createRabbitQueue();
    pipeline = await startTestPipeline(
      { CDN_URL: bed.cdn.origin, DOWNLOAD_ALLOW_PRIVATE_IPS: 'true' },
      bed.cdn.ca,
      {
        FORWARD_URLS: `${endpoint.url},${rabbit.url}`,
        FORWARD_SECRET: secret,
        FORWARD_ATTEMPTS: '2',
        FORWARD_BACKOFF_MS: '20',
      },
    );
    cleanups.push(
      () => endpoint.close(),
      () => rabbit.close(),
      async () => {
        await pipeline.close();
        await deleteKeys(redis, `${pipeline.receiver.config.queuePrefix}:*`);
      },
    );
  });

  it('past FORWARD_ATTEMPTS: `failures` lists it with its destination; `retry` sends it again, with fresh attempts', async () => {
    endpoint.failing = true;
    const id = `exhausted-${randomUUID()}`;
    await pipeline.post(item(id)).expect(202);
    await rabbit.inbox.atLeast(1);
    const listed = await eventually(async () => {
      const { stdout } = await pipeline.cli('failures', '--json');
      const rows = JSON.parse(stdout) as Record<string, unknown>[];
      return rows.length > 0 ? rows : undefined;
    });
    expect(listed).toEqual([
      expect.objectContaining({
        kind: 'forward',
        destination: destinationName(new URL(endpoint.url)),
        message_id: `audio.ready:${id}`,
        event: 'audio.ready',
        data_id: id,
        attempts: 2,
        reason: 'answered 503',
      }),
    ]);
    const table = await pipeline.cli('failures');
    expect(table.stdout).toContain(destinationName(new URL(endpoint.url)));
    expect(table.stdout).not.toContain(new URL(endpoint.url).pathname);
    expect(table.stdout).toContain('forwards past FORWARD_ATTEMPTS');

    // The endpoint fails the first try after the retry too: a retry that kept the job's attempts
    // of before would give up on it at once.
    endpoint.failing = false;
    endpoint.failNext = 1;
    const requestsBefore = endpoint.requests;
    const retried = await pipeline.cli('retry', String(listed[0]?.id));
    expect(retried).toMatchObject({
      code: 0,
      stdout: `job ${String(listed[0]?.id)} put back on the queue\n`,
    });
    await endpoint.inbox.atLeast(1);
    expect(endpoint.requests - requestsBefore).toBe(2);
    expect(endpoint.inbox.ids()).toEqual([`audio.ready:${id}`]);
    expect(JSON.parse((await pipeline.cli('failures', '--json')).stdout)).toEqual([]);
    expect(bed.cdn.hits.get(`/${id}.mp3`)).toBe(1);
  });

  it('a destination no longer configured fails at once, with its reason, while the others are still sent to', async () => {
    const id = `gone-${randomUUID()}`;
    const prefix = pipeline.receiver.config.queuePrefix;
    const forwards = createForwardQueue(redis, prefix);
    cleanups.push(() => forwards.close());
    const gone = 'https://removed.example:443~0badc0de';
    const body = JSON.stringify({
      type: 'audio.failed',
      id,
      timestamp: new Date().toISOString(),
      data: { id },
    });
    // As a worker of before left it: a destination since removed from FORWARD_URLS, and one still there.
    await forwards.add(
      'audio.failed',
      {
        destinations: [gone, destinationName(new URL(endpoint.url))],
        messageId: `audio.failed:${id}`,
        body,
      },
      { jobId: `gone-${id}` },
    );
    await endpoint.inbox.atLeast(1);
    const failed = await eventually(async () => {
      const job = await forwards.getJob(`gone-${id}`);
      return (await job?.isFailed()) ? job : undefined;
    });
    // One attempt, not FORWARD_ATTEMPTS: nothing later can change it. Read again: the job
    // above may have been read just before it moved to failed.
    expect((await forwards.getJob(String(failed.id)))?.attemptsMade).toBe(1);
    const rows = JSON.parse((await pipeline.cli('failures', '--json')).stdout) as Record<
      string,
      unknown
    >[];
    expect(rows).toEqual([
      expect.objectContaining({
        kind: 'forward',
        destination: gone,
        data_id: id,
        reason: "no longer in this worker's forward destinations",
        attempts: 1,
      }),
    ]);
  });

  it('a replay forwards again with the same id; a provider re-delivery (duplicate) forwards nothing', async () => {
    const id = `replayed-${randomUUID()}`;
    const delivery = item(id);
    await pipeline.post(delivery).expect(202);
    await rabbit.inbox.atLeast(1);
    await endpoint.inbox.atLeast(1);
    const again = await pipeline.post(delivery).expect(200);
    expect(again.body).toMatchObject({ duplicate: true });

    const replay = await pipeline.cli('replay', '--id', id);
    expect(replay.code).toBe(0);
    await rabbit.inbox.atLeast(2);
    await endpoint.inbox.atLeast(2);
    const wanted = [`audio.ready:${id}`, `audio.ready:${id}`];
    expect(rabbit.inbox.ids()).toEqual(wanted);
    expect(endpoint.inbox.ids()).toEqual(wanted);
    const [first, second] = rabbit.inbox.messages as [Received, Received];
    expect(second.body.timestamp > first.body.timestamp).toBe(true);
    expect(second.body.stored).toEqual(first.body.stored);
    // Every delivery job that forwarded this item: the delivery's and the replay's, none for the
    // duplicate; both sent at once (no forward job), none failed.
    const counts = await pipeline.cli('failures', '--json');
    expect(JSON.parse(counts.stdout)).toEqual([]);
    const completed = await pipeline.receiver.queue.getCompleted();
    expect(completed.filter((job) => jobItemId(job.data) === id)).toHaveLength(2);
    expect(await redis.zcard(`${pipeline.receiver.config.queuePrefix}:forwards:completed`)).toBe(0);
  });
});

it.each([
  ['an unknown scheme', { FORWARD_URLS: 'ftp://files.example.com/drop' }, /unknown scheme ftp:/],
  [
    'an HTTP destination without FORWARD_SECRET or FORWARD_SIGNING_KEY',
    { FORWARD_URLS: 'https://hooks.example.com/audio' },
    /neither FORWARD_SECRET nor FORWARD_SIGNING_KEY is set/,
  ],
  [
    'an unparsable URL',
    { FORWARD_URLS: 'nats://127.0.0.1:4222/a,not a url' },
    /entry 2 is not a URL/,
  ],
  [
    'a NATS URL without a subject',
    { FORWARD_URLS: 'nats://127.0.0.1:4222/' },
    /the path must be a subject/,
  ],
  [
    'an AMQP URL with a parameter it does not read (its password never printed)',
    { FORWARD_URLS: 'amqp://user:s3cret-pass@127.0.0.1:5672/?exchange=x&bogus=1' },
    /unknown parameter bogus/,
  ],
  [
    'a secret that is not whsec_<base64>',
    { FORWARD_URLS: 'https://hooks.example.com/audio', FORWARD_SECRET: 'plain-secret' },
    /FORWARD_SECRET must be whsec_/,
  ],
  [
    'a signing key that is not whsk_<base64 of 32 bytes> (never echoed)',
    {
      FORWARD_URLS: 'https://hooks.example.com/audio',
      FORWARD_SIGNING_KEY: `whsk_s3cret${'A'.repeat(36)}=`,
    },
    /FORWARD_SIGNING_KEY must be whsk_/,
  ],
])('%s: start refused with one line naming the setting, exit 1', async (_name, env, reason) => {
  const refused = service({ QUEUE_PREFIX: prefixed(), ...env });
  expect(await refused.exited).toBe(1);
  const lines = refused.stderr().split('\n').filter(Boolean);
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(
    /^audio-webhooks: invalid configuration: FORWARD_(URLS|SECRET|SIGNING_KEY) /,
  );
  expect(lines[0]).toMatch(reason);
  expect(refused.stderr()).not.toContain('s3cret');
});
