import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster } from 'ioredis';
import request from 'supertest';
import { runCli } from '../../src/cli/main';
import { serve } from '../../src/http-server/serve';
import { createLogger } from '../../src/telemetry/logger';
import { createProviderClient } from '../../src/provider/create-provider-client';
import { createReceiver, type Receiver } from '../../src/receiver/receiver';
import { createLocalBlobArea } from '../../src/provider/local-blob-area';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';
import { startWorkers } from '../../src/worker/start-workers';
import { audio, startLocalCdn, type LocalCdn } from '../../harness/local-cdn';
import { startPrivateCluster, type PrivateCluster } from '../helpers/servers/private-cluster';
import type { PrivateRedis } from '../../harness/private-redis';
import { eventually, startSandboxProcess } from '../../harness/sandbox-process';
import { signed, TEST_SECRET, testConfig } from '../helpers/test-receiver';

// Issue #12, test 3: a Redis Cluster of three primaries, no replicas (redis-cluster-failover
// loses a primary).
let cluster: PrivateCluster;
let nodes: readonly PrivateRedis[] = [];
let cdn: LocalCdn;

beforeAll(async () => {
  // First, so that afterAll can always close it.
  cdn = await startLocalCdn();
  cluster = await startPrivateCluster({ primaries: 3 });
  nodes = cluster.nodes;
}, 60_000);
afterAll(async () => {
  await cdn.close();
  await cluster.stop();
});

it('deliveries are accepted and deduplicated across connections, processed into files, and the CLI works', async () => {
  const prefix = `{aw-${randomUUID().slice(0, 8)}}`;
  const audioDir = mkdtempSync(join(tmpdir(), 'aw-cluster-'));
  const env = {
    AUDIO_DIR: audioDir,
    REDIS_CLUSTER_NODES: nodes.map((node) => `127.0.0.1:${node.port}`).join(','),
    QUEUE_PREFIX: prefix,
    CDN_URL: cdn.origin,
    DOWNLOAD_ALLOW_PRIVATE_IPS: 'true',
    DOWNLOAD_ATTEMPTS: '1',
  };
  // Three receivers, each its own Cluster connection, seeded from a different node.
  const receivers: Receiver[] = [0, 1, 2].map((i) =>
    createReceiver(
      testConfig({ ...env, REDIS_CLUSTER_NODES: `127.0.0.1:${nodes[i]!.port}` }),
      createLogger('silent'),
    ),
  );
  const workers = await startWorkers(testConfig(env), createLogger('silent'), { ca: cdn.ca });
  try {
    await eventually(() =>
      Promise.resolve(receivers.every((r) => r.redis.status === 'ready') ? true : undefined),
    );
    const post = (receiver: Receiver, body: unknown) => {
      const { raw, headers } = signed(body);
      return request(receiver.listener).post('/webhooks').set(headers).send(raw);
    };

    // The same item through all three connections at once: one job.
    const bytes = Buffer.from('cluster audio');
    cdn.route('/cluster-1.mp3', audio(bytes));
    const item = sampleDelivery('audio.ready', { id: 'cluster-1', cdnOrigin: cdn.origin });
    (item.data as Record<string, string>).audio_url = `${cdn.origin}/cluster-1.mp3`;
    const answers = await Promise.all(receivers.map((r) => post(r, item)));
    expect(answers.map((res) => res.status).sort()).toEqual([200, 200, 202]);

    const broken = sampleDelivery('audio.ready', { id: 'cluster-404' });
    (broken.data as Record<string, string>).audio_url = `${cdn.origin}/missing.mp3`;
    await post(receivers[1]!, broken).expect(202);
    await post(receivers[2]!, { event: 'key.revoked', data: { id: 'key_cluster' } }).expect(202);
    await post(receivers[0]!, { event: 'audio.failed', data: { id: 'job_cluster' } }).expect(202);

    const cli = async (...args: string[]) => {
      let stdout = '';
      const code = await runCli(
        args,
        { ...env },
        { out: (t) => (stdout += t) },
        { out: () => undefined },
      );
      return { code, stdout };
    };
    const json = async (command: string) =>
      JSON.parse((await cli(command, '--json')).stdout) as { id?: string; data_id?: string }[];
    await eventually(async () =>
      (await json('failed')).length === 1 &&
      (await json('revoked-keys')).length === 1 &&
      (await json('failures')).length === 1
        ? true
        : undefined,
    );
    expect((await json('failed'))[0]).toMatchObject({ data_id: 'cluster-404' });
    expect((await json('revoked-keys')).map((k) => k.id)).toEqual(['key_cluster']);
    expect((await json('failures')).map((f) => f.id)).toEqual(['job_cluster']);
    expect(await cli('retry', '--all')).toMatchObject({
      code: 0,
      stdout: '1 failed job put back on the queue\n',
    });

    const done = await eventually(async () => {
      const counts = await receivers[0]!.queue.getJobCounts('completed');
      return (counts.completed ?? 0) >= 3 ? counts : undefined;
    });
    expect(done.completed).toBe(3);
    expect(cdn.hits.get('/cluster-1.mp3')).toBe(1);
    expect(readFileSync(join(audioDir, 'cluster-1.mp3')).equals(bytes)).toBe(true);
  } finally {
    await workers.close();
    for (const receiver of receivers) await receiver.close();
  }
});

it('the sandbox and the provider client run on the Cluster too', async () => {
  const clusterNodes = nodes.map((node) => `127.0.0.1:${node.port}`).join(',');
  const prefix = `{aw-${randomUUID().slice(0, 8)}}`;
  const receiver = createReceiver(
    testConfig({ REDIS_CLUSTER_NODES: clusterNodes, QUEUE_PREFIX: prefix }),
    createLogger('silent'),
  );
  const server = await serve(receiver.listener, 0, '127.0.0.1');
  const sandbox = await startSandboxProcess({
    flags: { 'time-scale': '0.001', 'webhook-url': `http://127.0.0.1:${server.port}/webhooks` },
    env: { WEBHOOK_SECRETS: TEST_SECRET, REDIS_CLUSTER_NODES: clusterNodes },
    prefix: `{sbx-${randomUUID().slice(0, 8)}}`,
  });
  const cluster = new Cluster(nodes.map((node) => ({ host: '127.0.0.1', port: node.port })));
  try {
    const sent = await sandbox.call('POST', '/sandbox/events', {
      event: 'key.revoked',
      data: { id: 'key_on_cluster' },
    });
    const { id } = sent.body as { id: string };
    await eventually(async () => {
      const [found] = (await sandbox.call('GET', `/sandbox/deliveries?id=${id}`)).body as {
        state: string;
      }[];
      return found?.state === 'delivered' ? true : undefined;
    });
    expect(await receiver.queue.getJobCounts('waiting')).toEqual({ waiting: 1 });

    const client = await createProviderClient({
      baseUrl: sandbox.info.api,
      keys: [sandbox.info.key],
      redis: cluster,
      prefix,
      cacheArea: createLocalBlobArea(mkdtempSync(join(tmpdir(), 'aw-cluster-cache-'))),
    });
    const first = await client.tts({ text: 'on a cluster', voice: 'alloy' });
    const again = await client.tts({ text: 'on a cluster', voice: 'alloy' });
    expect(again).toMatchObject({ cached: true });
    expect(again.audio.equals(first.audio)).toBe(true);
    await client.close();
  } finally {
    cluster.disconnect();
    await sandbox.stop();
    await server.close();
    await receiver.close();
  }
});
