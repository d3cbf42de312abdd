import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, startPrivateRedis, type PrivateRedis } from '../../harness/private-redis';
import { killAfterTest } from '../helpers/after-test';
import { serviceSettings } from '../helpers/service-settings';
import { spawnService, type ServiceProcess } from '../helpers/spawn-service';
import { signed, TEST_SECRET } from '../helpers/test-receiver';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';

// What an operator sees of a Redis outage with ROLE=all: probes and scrapes that answer, and a
// log that says it once.
let redis: PrivateRedis | undefined;
let service: ServiceProcess | undefined;
afterEach(async () => {
  service?.child.kill('SIGKILL');
  service = undefined;
  await redis?.stop();
  redis = undefined;
});

/**
 * A GET's status. The endpoints' own deadline (2 s) answers for a Redis that does not; the bound
 * here only catches the hang they once had (a liveness probe waiting for good), and names it.
 */
async function probe(port: number, path: string): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${String(port)}${path}`, {
    headers: { connection: 'close' },
    signal: AbortSignal.timeout(10_000),
  }).catch((error: unknown) => {
    throw new Error(`GET ${path} on port ${String(port)} did not answer`, { cause: error });
  });
  await res.arrayBuffer();
  return res.status;
}

async function startAll(redisUrl: string) {
  const [port, internalPort, healthPort] = [await freePort(), await freePort(), await freePort()];
  service = spawnService(
    serviceSettings({
      REDIS_URL: redisUrl,
      ROLE: 'all',
      PORT: String(port),
      INTERNAL_PORT: String(internalPort),
      WORKER_HEALTH_PORT: String(healthPort),
      AUDIO_DIR: mkdtempSync(join(tmpdir(), 'aw-outage-')),
      // The liveness check asks Redis once the worker has idled this long.
      DOWNLOAD_TIMEOUT_MS: '500',
      WORKER_STALL_MS: '1000',
    }),
  );
  await service.waitForLog('audio-webhooks started');
  return { port, internalPort, healthPort, service };
}

it('Redis down from the start: /metrics and the worker /healthz answer 200 (their deadlines, not a hang), again and again', async () => {
  const { internalPort, healthPort } = await startAll(
    `redis://127.0.0.1:${String(await freePort())}`,
  );
  // Past WORKER_STALL_MS the liveness check asks Redis for the waiting jobs: that read used to
  // hang for good, so Kubernetes restarted healthy workers for a Redis outage.
  const answers = [];
  for (let i = 0; i < 2; i++) {
    answers.push(await probe(internalPort, '/metrics'));
    answers.push(await probe(healthPort, '/healthz'));
    answers.push(await probe(healthPort, '/metrics'));
  }
  expect(answers).toEqual(Array(6).fill(200));
}, 60_000);

it('a 10 s Redis outage under ROLE=all with deliveries arriving: one warning per connection when it starts, one line when it ends, no stack for a refused delivery, nothing on stderr', async () => {
  redis = await startPrivateRedis();
  const { port, internalPort, healthPort } = await startAll(redis.url);
  // Both connections up (the worker's may say so after the receiver's) before the outage starts.
  await service?.until(
    () =>
      new Set(
        service?.logs.filter((line) => line.msg === 'Redis connected').map((l) => l.connection),
      ).size === 2,
  );
  const from = service?.logs.length ?? 0;
  await redis.stop();
  const outageStarted = performance.now();
  const during = [];
  const refused: number[] = [];
  // The outage itself is the condition under test: it lasts 10 s, probed every second.
  while (performance.now() - outageStarted < 10_000) {
    during.push(await probe(internalPort, '/metrics'));
    during.push(await probe(healthPort, '/healthz'));
    // The provider keeps sending: each is refused (503, counted), never traced.
    const { raw, headers } = signed(
      sampleDelivery('key.revoked', { id: `k-${String(during.length)}` }),
    );
    refused.push(
      (
        await fetch(`http://127.0.0.1:${String(port)}/webhooks`, {
          method: 'POST',
          headers,
          body: raw,
        })
      ).status,
    );
    await sleep(1_000);
  }
  await redis.start();
  const logs = service?.logs ?? [];
  // Both connections (web, worker) say they are back.
  await service?.until(
    () => logs.slice(from).filter((line) => line.msg === 'Redis available again').length >= 2,
  );
  const lines = logs.slice(from);
  const loud = lines.filter((line) => Number(line.level) >= 40);
  expect(loud.map((line) => [line.msg, line.connection])).toEqual(
    expect.arrayContaining([
      ['Redis unavailable; retrying', 'web'],
      ['Redis unavailable; retrying', 'worker'],
    ]),
  );
  expect(loud).toHaveLength(2);
  expect(refused.length).toBeGreaterThan(5);
  expect(refused.every((status) => status === 503)).toBe(true);
  expect(lines.some((line) => 'err' in line)).toBe(false);
  expect(service?.stderr()).toBe('');
  expect(during).toEqual(Array(during.length).fill(200));
}, 60_000);

it('the sandbox without Redis says so in one line and exits 1', async () => {
  const child = spawn(
    process.execPath,
    [
      join(__dirname, '..', '..', 'bin', 'audio-webhooks.js'),
      'sandbox',
      '--port',
      '0',
      '--cdn-port',
      '0',
      '--dir',
      mkdtempSync(join(tmpdir(), 'aw-sbx-')),
    ],
    {
      env: {
        PATH: process.env.PATH ?? '',
        WEBHOOK_SECRETS: TEST_SECRET,
        REDIS_URL: `redis://127.0.0.1:${String(await freePort())}`,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  killAfterTest(child);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  expect({ code, stdout }).toEqual({ code: 1, stdout: '' });
  expect(stderr).toMatch(
    /^audio-webhooks: cannot reach Redis at redis:\/\/127\.0\.0\.1:\d+ within 5000 ms: connect ECONNREFUSED [^\n]+\n$/,
  );
}, 30_000);
