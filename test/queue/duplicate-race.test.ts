import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { createDeliveryQueue } from '../../src/queue/delivery-queue';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';
import { eventually } from '../../src/util/eventually';
import { withDeadline } from '../../src/util/deadline';
import { audio, startLocalCdn, type LocalCdn } from '../../harness/local-cdn';
import { freePort } from '../../harness/private-redis';
import { audioDirEntries } from '../helpers/audio-dir';
import { downloadsFrom, serviceSettings, webOn } from '../helpers/service-settings';
import { spawnService, type ServiceProcess } from '../helpers/spawn-service';
import { deleteKeys, signed } from '../helpers/test-receiver';

/**
 * The provider's re-sends of one delivery may reach two receiver processes at once (two pods
 * behind the balancer): one is accepted, every other is a duplicate, one job exists, and a
 * worker runs the handler once per delivery.
 */
const prefix = `race-${randomUUID()}`;
const redis = new Redis(process.env.REDIS_URL ?? '');
const services: ServiceProcess[] = [];
let cdn: LocalCdn;

beforeAll(async () => {
  cdn = await startLocalCdn();
  cdn.fallback(audio(Buffer.from('audio')));
});

afterAll(async () => {
  for (const service of services) service.child.kill('SIGKILL');
  await Promise.all(services.map((service) => service.exited));
  await deleteKeys(redis, `${prefix}:*`);
  redis.disconnect();
  await cdn.close();
});

const ROUNDS = 10;
/** A handler run of audio.ready logs one of these, whether it downloads or finds the file. */
const HANDLED = /^audio (already )?downloaded$/;

/** The worker: the local CDN trusted, its files in a folder of its own. */
function spawnWorker(audioDir: string): ServiceProcess {
  const caFile = join(mkdtempSync(join(tmpdir(), 'aw-ca-')), 'ca.pem');
  writeFileSync(caFile, cdn.ca);
  return spawnService(
    serviceSettings({
      QUEUE_PREFIX: prefix,
      ROLE: 'worker',
      AUDIO_DIR: audioDir,
      ...downloadsFrom(cdn.origin),
      NODE_EXTRA_CA_CERTS: caFile,
    }),
  );
}

it('the same delivery at two receiver processes at once: one 202, the rest 200 duplicate, one handler run', async () => {
  const audioDir = mkdtempSync(join(tmpdir(), 'aw-race-'));
  const worker = spawnWorker(audioDir);
  services.push(worker);
  const ports = [await freePort(), await freePort()];
  for (const port of ports) {
    const service = spawnService(serviceSettings({ QUEUE_PREFIX: prefix, ...webOn(port) }));
    services.push(service);
    await service.receiving();
  }
  await worker.waitForLog('audio-webhooks started');
  for (let round = 0; round < ROUNDS; round += 1) {
    const delivery = sampleDelivery('audio.ready', {
      id: `race-${round}`,
      data: { audio_url: `${cdn.origin}/race-${round}.mp3` },
    });
    const { raw, headers } = signed(delivery);
    const answers = await Promise.all(
      Array.from({ length: 10 }, async (_, i) => {
        const response = await fetch(`http://127.0.0.1:${ports[i % 2] ?? 0}/webhooks`, {
          method: 'POST',
          headers,
          body: raw,
        });
        return response.status;
      }),
    );
    expect({ round, accepted: answers.filter((s) => s === 202).length }).toEqual({
      round,
      accepted: 1,
    });
    expect(answers.filter((s) => s === 200)).toHaveLength(9);
  }

  const queue = createDeliveryQueue({ connection: redis, prefix });
  try {
    // Until nothing is left to run: a second job of one delivery would be run, or left, here.
    await eventually(
      async () => {
        const left = await queue.getJobCounts('wait', 'active', 'delayed', 'prioritized');
        return Object.values(left).every((n) => n === 0) ? true : undefined;
      },
      { timeoutMs: 60_000 },
    );
    expect(await queue.getJobCounts('completed', 'failed')).toEqual({
      completed: ROUNDS,
      failed: 0,
    });
  } finally {
    await queue.close();
  }
  // A line reaches this test through a pipe, after the job's completion reached Redis.
  const handledLines = () => worker.logs.filter((line) => HANDLED.test(String(line.msg)));
  await withDeadline(
    worker.until(() => handledLines().length >= ROUNDS),
    10_000,
    'a handled line per delivery',
  );
  const runs = handledLines();
  const ids = runs.map((line) => String(line.id)).sort();
  const expected = Array.from({ length: ROUNDS }, (_, round) => `race-${round}`).sort();
  expect(ids).toEqual(expected);
  expect(runs.filter((line) => line.msg !== 'audio downloaded')).toEqual([]);
  for (const id of expected) expect(cdn.hits.get(`/${id}.mp3`)).toBe(1);
  expect(audioDirEntries(audioDir)).toEqual(
    expected.flatMap((id) => [`${id}.json`, `${id}.mp3`]).sort(),
  );
}, 120_000);
