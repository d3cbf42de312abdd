import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { createLogger } from '../../src/telemetry/logger';
import { startWorkers } from '../../src/worker/start-workers';
import { freePort, startPrivateRedis } from '../../harness/private-redis';
import { eventually, startSandboxProcess } from '../../harness/sandbox-process';
import { serviceSettings } from '../helpers/service-settings';
import { spawnService, type ServiceProcess } from '../helpers/spawn-service';
import { deleteKeys, testConfig } from '../helpers/test-receiver';
import { audioDirEntries } from '../helpers/audio-dir';

// Issue #8, test 2: nothing lost through outages, by the provider's own retries alone.
const SECRET = 'whsec_outage_test';
const ITEMS = 500;
const CONCURRENCY = 16;

interface Delivery {
  data_id: string;
  state: string;
  attempts: unknown[];
}

it('a 500-item batch while the receiver, then Redis, are SIGKILLed and restarted: every audio on disk once, none exhausted', async () => {
  // The receiver's Redis: private (it is killed), with the append-only file as in production.
  const redis = await startPrivateRedis({ persistent: true });
  const port = await freePort();
  const sbx = await startSandboxProcess({
    flags: { 'time-scale': '0.001', 'webhook-url': `http://127.0.0.1:${port}/webhooks` },
    env: { WEBHOOK_SECRETS: SECRET },
  });
  const prefix = `test-${randomUUID()}`;
  const env = serviceSettings({
    WEBHOOK_SECRETS: SECRET,
    REDIS_URL: redis.url,
    QUEUE_PREFIX: prefix,
    ROLE: 'web',
    PORT: String(port),
  });
  let receiver: ServiceProcess = spawnService(env);
  const audioDir = join(sbx.dir, 'received');
  const hookRuns = new Map<string, number>();
  /** Runs made as a job's first run (`delivery.firstRun`), per id. */
  const firstRuns = new Map<string, number>();
  let allHooked!: () => void;
  const hooked = new Promise<void>((resolve) => (allHooked = resolve));
  const workers = await startWorkers(
    testConfig({
      REDIS_URL: redis.url,
      QUEUE_PREFIX: prefix,
      AUDIO_DIR: audioDir,
      CDN_URL: sbx.info.cdn,
      DOWNLOAD_CA_FILE: sbx.info.ca,
      DOWNLOAD_ALLOW_PRIVATE_IPS: 'true',
      DOWNLOAD_BACKOFF_MS: '100',
      WORKER_LOCK_MS: '5000',
      WORKER_CONCURRENCY: String(CONCURRENCY),
    }),
    createLogger('silent'),
    {
      hooks: {
        audioReady(event, _audio, { delivery }) {
          hookRuns.set(event.data.id, (hookRuns.get(event.data.id) ?? 0) + 1);
          if (delivery.firstRun)
            firstRuns.set(event.data.id, (firstRuns.get(event.data.id) ?? 0) + 1);
          if (hookRuns.size === ITEMS) allHooked();
          return Promise.resolve();
        },
      },
    },
  );
  const delivered = async () =>
    ((await sbx.call('GET', '/sandbox/deliveries')).body as Delivery[]).filter(
      (d) => d.state === 'delivered',
    ).length;

  try {
    await receiver.waitForLog('audio-webhooks started');
    const items = Array.from({ length: ITEMS }, (_unused, i) => ({
      id: `item-${i}`,
      text: `outage item ${i}`,
      voice: 'alloy',
    }));
    const batch = await sbx.call('POST', '/v1/tts/batch', { items }, sbx.info.key.token);
    expect(batch.status).toBe(202);

    // The receiver dies mid-stream and comes back on the same port.
    await eventually(async () => ((await delivered()) >= 50 ? true : undefined), { everyMs: 20 });
    receiver.child.kill('SIGKILL');
    await receiver.exited;
    await new Promise((resolve) => setTimeout(resolve, 500));
    receiver = spawnService(env);
    await receiver.waitForLog('audio-webhooks started');

    // Then Redis dies (SIGKILL) under load and restarts from its append-only file.
    await eventually(async () => ((await delivered()) >= 250 ? true : undefined), { everyMs: 20 });
    await redis.stop();
    await new Promise((resolve) => setTimeout(resolve, 500));
    await redis.start();

    const all = await eventually(
      async () => {
        const found = (await sbx.call('GET', '/sandbox/deliveries')).body as Delivery[];
        return found.length === ITEMS && found.every((d) => d.state !== 'pending')
          ? found
          : undefined;
      },
      { timeoutMs: 120_000, everyMs: 250 },
    );
    expect(all.filter((d) => d.state === 'exhausted')).toEqual([]);
    await hooked;

    const names = audioDirEntries(audioDir);
    expect(names.filter((name) => name.startsWith('.partial'))).toEqual([]);
    expect(names).toHaveLength(ITEMS * 2);
    for (let i = 0; i < ITEMS; i++) {
      const meta = JSON.parse(readFileSync(join(audioDir, `item-${i}.json`), 'utf8')) as {
        id: string;
        audio_url: string;
        sha256: string;
      };
      const served = readFileSync(
        join(sbx.dir, 'audio', new URL(meta.audio_url).pathname.slice(7)),
      );
      const stored = readFileSync(join(audioDir, `item-${i}.wav`));
      expect(meta.id).toBe(`item-${i}`);
      expect(createHash('sha256').update(stored).digest('hex')).toBe(meta.sha256);
      expect(meta.sha256).toBe(createHash('sha256').update(served).digest('hex'));
    }
    // The receiver's death cannot run a hook twice: a delivery is queued once (the dedupe mark),
    // whatever the provider retries. Redis's death can: a job whose hook had run when Redis died
    // could not record its completion, and is run again once its lock expires (at least once,
    // docs/extending.md: `firstRun` false on that run). Only jobs active at that moment can be
    // such a job, so: no id starts a first run twice, at most WORKER_CONCURRENCY ids run twice,
    // and none three times.
    expect([...firstRuns.values()].filter((runs) => runs > 1)).toEqual([]);
    const again = [...hookRuns].filter(([, runs]) => runs > 1);
    expect(again.filter(([, runs]) => runs > 2)).toEqual([]);
    expect(again.length).toBeLessThanOrEqual(CONCURRENCY);
    expect(hookRuns.size).toBe(ITEMS);
  } finally {
    receiver.child.kill('SIGKILL');
    await receiver.exited;
    await workers.close();
    await sbx.stop();
    await redis.stop();
    const shared = new Redis(process.env.REDIS_URL ?? '');
    await deleteKeys(shared, `${sbx.prefix}:*`);
    shared.disconnect();
  }
}, 240_000);
