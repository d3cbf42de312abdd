import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { request } from 'undici';
import { withDeadline } from '../../src/util/deadline';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';
import { startLocalCdn, type LocalCdn } from '../../harness/local-cdn';
import { freePort } from '../../harness/private-redis';
import { serviceSettings } from '../helpers/service-settings';
import { spawnService, type ServiceProcess } from '../helpers/spawn-service';
import { deleteKeys, signed } from '../helpers/test-receiver';

// The real `node dist/main.js`, as an operator meets it: start-up, its messages, its signals.
const prefix = `test-${randomUUID()}`;
const redis = new Redis(process.env.REDIS_URL ?? '');
// Whatever a test leaves running, spawn-service.ts kills after it.
afterAll(async () => {
  await deleteKeys(redis, `${prefix}:*`);
  redis.disconnect();
});

const tempDir = () => mkdtempSync(join(tmpdir(), 'aw-proc-'));

function start(env: Record<string, string>, options: { cwd?: string } = {}): ServiceProcess {
  return spawnService(
    serviceSettings({ QUEUE_PREFIX: prefix, AUDIO_DIR: tempDir(), ...env }),
    options,
  );
}

/** What a test allows for a process to react (exit, stop): long enough only to catch a hang. */
const HANG_MS = 15_000;

/** No stack trace: the operator gets one line that names the setting. */
const NO_STACK = /^\s+at /m;

describe('start-up problems name the variable to fix', () => {
  let taken: Server | undefined;
  afterEach(() => {
    taken?.close();
    taken = undefined;
  });

  it('PORT already in use', async () => {
    const server = createServer();
    taken = server;
    const port = await freePort();
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    const service = start({ PORT: String(port), ROLE: 'web' });
    expect(await service.exited).toBe(1);
    expect(service.stderr()).toMatch(
      new RegExp(`PORT ${port} is already in use on HOST 127\\.0\\.0\\.1: set PORT`),
    );
    expect(service.stderr()).not.toMatch(NO_STACK);
  });

  it('HOST that is not an address of this machine', async () => {
    // A secret fit for a HOST others can reach, so the listen itself is what fails.
    const service = start({
      PORT: String(await freePort()),
      HOST: '192.0.2.1',
      ROLE: 'web',
      WEBHOOK_SECRETS: 'whsec_' + 'k'.repeat(32),
    });
    expect(await service.exited).toBe(1);
    expect(service.stderr()).toMatch(
      /HOST 192\.0\.2\.1 is not an address of this machine: set HOST/,
    );
    expect(service.stderr()).not.toMatch(NO_STACK);
  });

  it('AUDIO_DIR that cannot be written: the worker refuses to start', async () => {
    const file = join(tempDir(), 'a-file');
    writeFileSync(file, 'not a directory');
    const service = start({ ROLE: 'worker', AUDIO_DIR: join(file, 'audio') });
    expect(await service.exited).toBe(1);
    expect(service.stderr()).toMatch(/AUDIO_DIR .*a-file\/audio: ENOTDIR/);
    expect(service.stderr()).not.toMatch(NO_STACK);
  });

  it('bad variables: one message in the same form for one and for several, no stack', async () => {
    const one = start({ ROLE: 'everything' });
    expect(await one.exited).toBe(1);
    expect(one.stderr()).toMatch(/^audio-webhooks: invalid configuration: ROLE [^\n]+\n$/);
    const two = start({ ROLE: 'everything', PORT: 'eighty' });
    expect(await two.exited).toBe(1);
    expect(two.stderr()).toMatch(
      /^audio-webhooks: invalid configuration:\n {2}- PORT [^\n]+\n {2}- ROLE [^\n]+\n$/,
    );
  });

  it('DOWNLOAD_CA_FILE that holds no certificate', async () => {
    const file = join(tempDir(), 'ca.pem');
    writeFileSync(file, 'nothing');
    const service = start({ ROLE: 'worker', DOWNLOAD_CA_FILE: file });
    expect(await service.exited).toBe(1);
    expect(service.stderr()).toMatch(/DOWNLOAD_CA_FILE .*ca\.pem holds no PEM certificate/);
  });
});

it('reads .env from the working directory; the real environment wins', async () => {
  const cwd = tempDir();
  const port = await freePort();
  writeFileSync(
    join(cwd, '.env'),
    `WEBHOOK_SECRETS=from-dotenv\nPORT=${port}\nQUEUE_PREFIX=${prefix}\nWEBHOOK_PATH=/from-dotenv\n`,
  );
  const service = spawnService(
    {
      REDIS_URL: process.env.REDIS_URL ?? '',
      HOST: '127.0.0.1',
      ROLE: 'web',
      WEBHOOK_PATH: '/from-env',
    },
    { cwd },
  );
  const started = await service.waitForLog('audio-webhooks started');
  expect(started).toMatchObject({ listen: `127.0.0.1:${port}`, webhookPath: '/from-env' });
  expect(started.dotenv).toBe(join(cwd, '.env'));
  await service.receiving();
  const { raw, headers } = signed(sampleDelivery('key.revoked'), { secret: 'from-dotenv' });
  const res = await request(`http://127.0.0.1:${port}/from-env`, {
    method: 'POST',
    headers,
    body: raw,
  });
  expect(res.statusCode).toBe(202);
  await res.body.dump();
});

it('says once what it is and where everything goes, and warns of risky settings', async () => {
  const service = start({
    PORT: String(await freePort()),
    WEBHOOK_SECRETS: 'whsec_replace_me',
    DOWNLOAD_ALLOW_PRIVATE_IPS: 'true',
    ADMIN_PASSWORD: 'letmein',
    REDIS_URL: (process.env.REDIS_URL ?? '').replace('redis://', 'redis://:hunter2@'),
  });
  const started = await service.waitForLog('audio-webhooks started');
  expect(started).toMatchObject({
    version: expect.stringMatching(/^\d+\.\d+\.\d+/),
    role: 'all',
    listen: expect.stringMatching(/^127\.0\.0\.1:\d+$/),
    webhookPath: '/webhooks',
    redis: expect.stringContaining(':***@'),
    queuePrefix: prefix,
    cdnOrigins: [],
    toleranceSeconds: 300,
  });
  const warnings = service.logs.filter((line) => line.level === 40).map((line) => line.msg);
  expect(warnings).toEqual(
    expect.arrayContaining([
      expect.stringMatching(/^WEBHOOK_SECRETS holds an example secret/),
      expect.stringMatching(/^CDN_URL is empty/),
      expect.stringMatching(/^DOWNLOAD_ALLOW_PRIVATE_IPS=true/),
      expect.stringMatching(/^ADMIN_PASSWORD is shorter than 12 characters/),
    ]),
  );
  expect(JSON.stringify(service.logs)).not.toContain('hunter2');
  expect(JSON.stringify(service.logs)).not.toContain('letmein');
});

/**
 * Listens on `port` and resets every connection as it comes: Redis is still not reachable, and
 * each reconnect attempt is an event a test can wait for instead of sleeping.
 */
async function resettingPort(port: number): Promise<{
  attempts(count: number): Promise<void>;
  close(): Promise<void>;
}> {
  let seen = 0;
  const waiters: { count: number; resolve: () => void }[] = [];
  const server = createServer((socket) => {
    seen += 1;
    socket.resetAndDestroy();
    for (const waiter of waiters.filter((w) => seen >= w.count)) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    attempts: (count) =>
      withDeadline(
        seen >= count
          ? Promise.resolve()
          : new Promise<void>((resolve) => waiters.push({ count, resolve })),
        HANG_MS,
        `${count} connection attempts at port ${port} (${seen} so far)`,
      ),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      }),
  };
}

describe('Redis down', () => {
  const NOT_YET = 'Redis not reachable yet; retrying until it answers';
  let resetting: Awaited<ReturnType<typeof resettingPort>> | undefined;
  afterEach(async () => {
    await resetting?.close();
    resetting = undefined;
  });

  it('the worker says once that Redis is not reachable yet, no stack traces, and SIGTERM exits at once', async () => {
    const deadPort = await freePort();
    const service = start({
      ROLE: 'worker',
      REDIS_URL: `redis://:hunter2@127.0.0.1:${deadPort}`,
      SHUTDOWN_TIMEOUT_MS: String(2 * HANG_MS),
    });
    await service.waitForLog('audio-webhooks started');
    await service.waitForLog(NOT_YET);
    // A dozen more attempts fail (now reset rather than refused): still the one line.
    resetting = await resettingPort(deadPort);
    await resetting.attempts(12);
    const told = service.logs.filter((line) => line.msg === NOT_YET);
    expect(told).toHaveLength(1);
    expect(told[0]).toMatchObject({ redis: `redis://:***@127.0.0.1:${deadPort}` });
    // Not an outage: it never was reachable.
    expect(service.logs.filter((line) => line.msg === 'Redis unavailable; retrying')).toEqual([]);
    expect(service.logs.filter((line) => line.level === 50)).toEqual([]);
    expect(JSON.stringify(service.logs)).not.toMatch(/"stack"|hunter2/);

    // At once: it does not wait SHUTDOWN_TIMEOUT_MS for a Redis that never answered.
    service.child.kill('SIGTERM');
    expect(await withDeadline(service.exited, HANG_MS, 'the worker exiting on SIGTERM')).toBe(0);
  });

  it('ROLE=all with REDIS_URL at a closed port: it starts, /readyz says 503, and one line says where it looked', async () => {
    const [deadPort, port] = [await freePort(), await freePort()];
    const service = start({ REDIS_URL: `redis://127.0.0.1:${deadPort}`, PORT: String(port) });
    await service.waitForLog('audio-webhooks started');
    const told = await service.waitForLog(NOT_YET);
    expect(told).toMatchObject({
      level: 40,
      redis: `redis://127.0.0.1:${deadPort}`,
      reason: expect.stringContaining('ECONNREFUSED'),
    });
    const ready = await request(`http://127.0.0.1:${port}/readyz`);
    await ready.body.dump();
    expect(ready.statusCode).toBe(503);
    // The receiver's and the worker's connections both retry: still one line between them.
    resetting = await resettingPort(deadPort);
    await resetting.attempts(12);
    expect(service.logs.filter((line) => line.msg === NOT_YET)).toHaveLength(1);
    expect(service.logs.filter((line) => Number(line.level) >= 40).map((l) => l.msg)).toEqual(
      expect.not.arrayContaining(['Redis unavailable; retrying']),
    );
  });
});

it('the CLI exits once it has said Redis is unreachable (it lingered 2.5 s): no hang', async () => {
  const bin = join(__dirname, '..', '..', 'bin', 'audio-webhooks.js');
  const cli = spawnService(
    { REDIS_URL: `redis://127.0.0.1:${await freePort()}` },
    { command: [process.execPath, bin, 'failed'] },
  );
  // How fast it gives up is the bench's to measure; here, that it exits and says why.
  expect(await withDeadline(cli.exited, HANG_MS, 'the CLI exiting')).toBe(1);
  expect(cli.stderr()).toMatch(/cannot reach Redis/);
});

describe('a second signal', () => {
  let cdn: LocalCdn;
  beforeAll(async () => {
    cdn = await startLocalCdn();
  });
  afterAll(() => cdn.close());

  it('exits at once during a slow graceful shutdown, and says so', async () => {
    // A download that never finishes keeps the graceful shutdown waiting.
    let stalled!: () => void;
    const downloading = new Promise<void>((resolve) => (stalled = resolve));
    cdn.route('/slow.mp3', (_req, res) => {
      res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': 1000 });
      res.write(Buffer.alloc(10));
      stalled();
    });
    const caFile = join(tempDir(), 'ca.pem');
    writeFileSync(caFile, cdn.ca);
    const port = await freePort();
    const service = start({
      PORT: String(port),
      CDN_URL: cdn.origin,
      DOWNLOAD_ALLOW_PRIVATE_IPS: 'true',
      DOWNLOAD_CA_FILE: caFile,
      // Longer than the wait below: an exit within it is the second signal's, not the timeout's.
      SHUTDOWN_TIMEOUT_MS: String(2 * HANG_MS),
    });
    await service.receiving();
    const delivery = sampleDelivery('audio.ready', {
      id: `slow-${randomUUID()}`,
      data: { audio_url: `${cdn.origin}/slow.mp3` },
    });
    const { raw, headers } = signed(delivery);
    const res = await request(`http://127.0.0.1:${port}/webhooks`, {
      method: 'POST',
      headers,
      body: raw,
    });
    expect(res.statusCode).toBe(202);
    await res.body.dump();
    await downloading;

    service.child.kill('SIGTERM');
    await service.waitForLog('shutting down');
    service.child.kill('SIGINT');
    expect(await withDeadline(service.exited, HANG_MS, 'the exit on a second signal')).toBe(1);
    expect(service.logs.map((line) => line.msg)).toContain(
      'second signal: exiting now without waiting',
    );
  });
});
