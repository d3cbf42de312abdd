import request from 'supertest';
import type { RunningServer } from '../../src/http-server/serve';
import { createLogger } from '../../src/telemetry/logger';
import { BACKLOG_METRIC } from '../../src/telemetry/metrics';
import { webhookEventSchema } from '../../src/provider-spec/events';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';
import { serveWorkerHealth } from '../../src/worker/health-server';
import { startWorkers, type RunningWorkers } from '../../src/worker/start-workers';
import { freePort } from '../../harness/private-redis';
import { eventually } from '../../harness/sandbox-process';
import { serviceSettings } from '../helpers/service-settings';
import { spawnService } from '../helpers/spawn-service';
import {
  createTestReceiver,
  signed,
  testConfig,
  type TestReceiver,
} from '../helpers/test-receiver';

let receiver: TestReceiver;
let workers: RunningWorkers | undefined;
let health: RunningServer | undefined;
let releaseHook = () => {};

beforeEach(async () => {
  receiver = await createTestReceiver();
});
afterEach(async () => {
  releaseHook();
  await health?.close();
  await workers?.close();
  await receiver.close();
  health = workers = undefined;
});

const post = (body: unknown) => {
  const { raw, headers } = signed(body);
  return request(receiver.listener).post('/webhooks').set(headers).send(raw);
};

it('a worker whose job never settles fails its liveness probe with the reason, and recovers when it does', async () => {
  let hookStarted = () => {};
  const started = new Promise<void>((resolve) => (hookStarted = resolve));
  const config = testConfig({
    QUEUE_PREFIX: receiver.config.queuePrefix,
    WORKER_STALL_MS: '2000',
    DOWNLOAD_TIMEOUT_MS: '500',
  });
  workers = await startWorkers(config, createLogger('silent'), {
    hooks: {
      // A hook stuck on a call that never answers: the process lives, the job never ends.
      keyRevoked: () => {
        hookStarted();
        return new Promise<void>((resolve) => (releaseHook = resolve));
      },
    },
  });
  health = await serveWorkerHealth(
    { liveness: workers.liveness, registry: workers.registry, logger: createLogger('silent') },
    0,
    '127.0.0.1',
  );
  const probe = () => request(`http://127.0.0.1:${health?.port ?? 0}`).get('/healthz');
  expect((await probe()).status).toBe(200);

  await post(sampleDelivery('key.revoked', { id: 'key_stuck' })).expect(202);
  await started;
  /** How long the probe says the oldest job has run, from its 503's reason. */
  const ranMs = (body: unknown) =>
    Number(/has run (\d+) ms/.exec((body as { detail?: string }).detail ?? '')?.[1] ?? NaN);
  // A job in hand is fine for WORKER_STALL_MS: a 503 now (a loaded machine can take 2 s to get
  // here) must be for a job that has run at least that long, never sooner.
  const inHand = await probe();
  expect(inHand.status === 200 || ranMs(inHand.body) >= 2000).toBe(true);
  const wedged = await eventually(async () => {
    const res = await probe();
    return res.status === 503 ? res : undefined;
  });
  expect(wedged.body).toEqual({
    detail: expect.stringMatching(
      /^holds 1 job; the oldest has run \d+ ms \(WORKER_STALL_MS 2000\)$/,
    ),
  });
  expect(ranMs(wedged.body)).toBeGreaterThanOrEqual(2000);

  const completed = new Promise((resolve) => workers?.worker.once('completed', resolve));
  releaseHook();
  await completed;
  expect((await probe()).status).toBe(200);
});

it('a ROLE=worker process with WORKER_HEALTH_PORT serves /healthz and /metrics with the backlog', async () => {
  const port = await freePort();
  await receiver.queue.add(
    'key.revoked',
    {
      event: webhookEventSchema.parse(sampleDelivery('key.revoked', { id: 'key_later' })),
      receivedAt: new Date().toISOString(),
    },
    { delay: 3_600_000 },
  );
  const service = spawnService(
    serviceSettings({
      QUEUE_PREFIX: receiver.config.queuePrefix,
      ROLE: 'worker',
      WORKER_HEALTH_PORT: String(port),
    }),
  );
  try {
    await service.waitForLog('audio-webhooks started');
    const base = `http://127.0.0.1:${port}`;
    await request(base).get('/healthz').expect(200, { status: 'ok' });
    const metrics = await request(base).get('/metrics').expect(200);
    // The delayed job counts: BullMQ keeps it outside the wait list, KEDA must still see it.
    expect(metrics.text).toMatch(new RegExp(`^${BACKLOG_METRIC} 1$`, 'm'));
    expect(metrics.text).toMatch(/^webhook_queue_jobs\{state="delayed"\} 1$/m);
  } finally {
    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
  }
});
