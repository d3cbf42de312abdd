import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import request from 'supertest';
import { createLogger } from '../../src/telemetry/logger';
import { deliveryKeys } from '../../src/queue/delivery-keys';
import { dropConnection } from '../../src/redis/connections';
import { withDeadline } from '../../src/util/deadline';
import { startWorkers } from '../../src/worker/start-workers';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';
import { startPrivateRedis, startPrivateSentinel, whenReady } from '../../harness/private-redis';
import { eventually } from '../../harness/sandbox-process';
import { createTestReceiver, signed, testConfig } from '../helpers/test-receiver';

// Issue #12, tests 1 and 2: a Sentinel failover under load, with and without WAIT. Every
// process is the test's own, on loopback.
const SENDERS = 20;
/** Each sender's pace: at most 20 × 1,000 / 40 = 500 deliveries a second. */
const SEND_EVERY_MS = 40;
const RUN_MS = 15_000;
/**
 * How long after the primary's death the senders keep going, should no 2xx have come back by the
 * end of the run: a bound on a failover that never completes, not a measure of how soon it does.
 */
const RECOVERY_BOUND_MS = 45_000;
/** How long the replicas are held back before the primary dies. */
const HOLD_MS = Number(process.env.FAILOVER_HOLD_MS ?? 500);

interface Outcome {
  readonly accepted: string[];
  readonly lost: number;
  readonly unavailable: number;
  readonly recoveredMs: number;
}

async function failoverUnderLoad(waitReplicas: number): Promise<Outcome> {
  const primary = await startPrivateRedis({ persistent: true });
  const replicas = await Promise.all(
    [0, 1].map(() =>
      startPrivateRedis({
        persistent: true,
        args: ['--replicaof', '127.0.0.1', String(primary.port)],
      }),
    ),
  );
  const sentinels = await Promise.all([0, 1, 2].map(() => startPrivateSentinel(primary.port, 2)));
  const all: { stop(): Promise<void> }[] = [primary, ...replicas, ...sentinels];
  const probe = new Redis(sentinels[0]!.port, '127.0.0.1');
  // Closed in reverse order in `finally`, whatever failed: a client left open keeps reconnecting
  // to the stopped servers for ever, and Jest then never exits (CI hung until killed).
  const closers: (() => Promise<void> | void)[] = [
    () => {
      dropConnection(probe);
    },
  ];
  try {
    // The Sentinels know each other and both replicas before anything happens.
    await eventually(
      async () => {
        const master = (await probe.call('SENTINEL', 'MASTER', 'mymaster')) as string[];
        const field = (name: string) => Number(master[master.indexOf(name) + 1]);
        return field('num-other-sentinels') === 2 && field('num-slaves') === 2 ? true : undefined;
      },
      { timeoutMs: 20_000, everyMs: 200 },
    );

    const prefix = `failover-${randomUUID()}`;
    const env = {
      REDIS_URL: 'redis://127.0.0.1:1',
      REDIS_SENTINELS: sentinels.map((s) => `127.0.0.1:${s.port}`).join(','),
      QUEUE_PREFIX: prefix,
      REDIS_WAIT_REPLICAS: String(waitReplicas),
      REDIS_WAIT_TIMEOUT_MS: '500',
    };
    const receiver = await createTestReceiver(env);
    // close() deletes the test's keys first; should that fail or hang, the connection still goes.
    closers.push(() =>
      withDeadline(receiver.close(), 10_000, 'the receiver close').finally(() => {
        dropConnection(receiver.redis);
      }),
    );
    const accepted: string[] = [];
    let unavailable = 0;
    let killedAt = 0;
    let firstOkAfterKill = 0;
    const stopAt = Date.now() + RUN_MS;
    // The run's length, and past it until a delivery sent after the kill is accepted (or the bound).
    const sending = () =>
      Date.now() < stopAt ||
      (firstOkAfterKill === 0 && (killedAt === 0 || Date.now() < killedAt + RECOVERY_BOUND_MS));
    const senders = Array.from({ length: SENDERS }, async () => {
      while (sending()) {
        const sent = Date.now();
        const delivery = sampleDelivery('audio.failed');
        const { raw, headers } = signed(delivery);
        const res = await request(receiver.listener).post('/webhooks').set(headers).send(raw);
        if (res.status === 202) {
          accepted.push((delivery.data as { id: string }).id);
          // Only a delivery sent once the primary was gone shows the failover done: an answer to
          // one sent before it (stored on the old primary) can arrive after the kill, in the same
          // millisecond (a fresh-clone run read recoveredMs 0).
          if (killedAt > 0 && sent >= killedAt && firstOkAfterKill === 0)
            firstOkAfterKill = Date.now();
        } else if (res.status === 503) {
          unavailable++;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        // A steady load, not as fast as the receiver answers: what is acknowledged must stay
        // under the 10,000 completed jobs the queue keeps, which the drain below counts.
        const pause = SEND_EVERY_MS - (Date.now() - sent);
        if (pause > 0) await new Promise((resolve) => setTimeout(resolve, pause));
      }
    });
    // Mid-run: the replicas fall ~500 ms behind (the lag a real network has), the primary dies.
    await new Promise((resolve) => setTimeout(resolve, RUN_MS / 3));
    for (const replica of replicas) replica.freeze();
    await new Promise((resolve) => setTimeout(resolve, HOLD_MS));
    await primary.stop();
    killedAt = Date.now();
    for (const replica of replicas) replica.thaw();
    await Promise.all(senders);

    // Under load the failover can outlast the run: read nothing until the Sentinels name the new
    // primary and the receiver's connection is back on it. Its reads fail fast while it is not
    // (enableOfflineQueue: false): one made mid-failover failed this test with "Stream isn't
    // writeable", and skipped the closes that followed it.
    const promoted = await eventually(
      async () => {
        const [host, port] = (await probe.call(
          'SENTINEL',
          'GET-MASTER-ADDR-BY-NAME',
          'mymaster',
        )) as [string, string];
        return Number(port) === primary.port ? undefined : { host, port: Number(port) };
      },
      { timeoutMs: 30_000, everyMs: 200 },
    );
    await whenReady(receiver.redis, 30_000);

    // Every delivery answered 2xx must be on the new primary.
    const fresh = new Redis(promoted.port, promoted.host);
    closers.push(() => {
      dropConnection(fresh);
    });
    const pipeline = fresh.pipeline();
    for (const id of accepted)
      pipeline.exists(deliveryKeys(prefix).pairOf('audio.failed', id).mark);
    const found = (await pipeline.exec()) ?? [];
    const lost = found.filter(([, exists]) => exists !== 1).length;

    // A worker on the same Sentinels drains what was acknowledged.
    const workers = await startWorkers(testConfig(env), createLogger('silent'));
    closers.push(() => workers.close());
    const expected = accepted.length - lost;
    await eventually(
      async () => {
        // A read the fail-fast connection refuses (a late role change) is "not yet".
        const counts = await receiver.queue
          .getJobCounts('completed', 'waiting', 'active')
          .catch(() => undefined);
        if (counts === undefined) return undefined;
        return counts.waiting === 0 && counts.active === 0 && (counts.completed ?? 0) >= expected
          ? true
          : undefined;
      },
      { timeoutMs: 30_000, everyMs: 250 },
    );
    return { accepted, lost, unavailable, recoveredMs: firstOkAfterKill - killedAt };
  } finally {
    await closeAll(closers);
    for (const process of all) await process.stop();
  }
}

/**
 * Runs every closer, newest first, each bounded, even when one fails; a failure is reported, not
 * thrown, so that it cannot hide the test's own. Clients close before the servers stop.
 */
async function closeAll(closers: (() => Promise<void> | void)[]): Promise<void> {
  for (const close of closers.reverse()) {
    await withDeadline(Promise.resolve(close()), 15_000, 'a close').catch((error: unknown) => {
      process.stderr.write(`teardown: ${String(error)}\n`);
    });
  }
}

it('with REDIS_WAIT_REPLICAS=1: a failover loses no acknowledged delivery, and 2xx return by themselves', async () => {
  const outcome = await failoverUnderLoad(1);
  expect(outcome.accepted.length).toBeGreaterThan(100);
  expect(outcome.lost).toBe(0);
  // Positive: a delivery sent after the kill was accepted within RECOVERY_BOUND_MS.
  expect(outcome.recoveredMs).toBeGreaterThan(0);
}, 150_000);

it('without WAIT: the receiver follows the same failover, 2xx return by themselves, and what the new primary holds is drained', async () => {
  const outcome = await failoverUnderLoad(0);
  expect(outcome.accepted.length).toBeGreaterThan(100);
  // Without WAIT the contract does not promise that an acknowledged delivery survives a failover
  // (docs/redis.md: the primary answers before its replicas have the write), so `lost` is not
  // bounded here; the drain in failoverUnderLoad waits for every delivery the new primary holds.
  // What is promised is that the web role finds the new primary without a restart.
  // Positive: a delivery sent after the kill was accepted within RECOVERY_BOUND_MS.
  expect(outcome.recoveredMs).toBeGreaterThan(0);
}, 150_000);
