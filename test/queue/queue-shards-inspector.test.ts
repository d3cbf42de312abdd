import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { runCli } from '../../src/cli/main';
import { serve, type RunningServer } from '../../src/http-server/serve';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';
import { jobItemId } from '../../src/queue/delivery-job-data';
import { createDeliveryQueues } from '../../src/queue/delivery-queue';
import { deliveryKeys } from '../../src/queue/delivery-keys';
import { createReceiver, type Receiver } from '../../src/receiver/receiver';
import { createLogger } from '../../src/telemetry/logger';
import { startWorkers, type RunningWorkers } from '../../src/worker/start-workers';
import { audio, startLocalCdn, type LocalCdn } from '../../harness/local-cdn';
import {
  startPrivateCluster,
  waitFor,
  type PrivateCluster,
} from '../helpers/servers/private-cluster';
import { signed, TEST_SECRET, testConfig } from '../helpers/test-receiver';

// QUEUE_SHARDS=6 on a Cluster of three primaries, each with a replica: the inspector's API, the
// queue dashboard's job link, and the CLI's failed, inspect and replay see every shard as one
// queue; a retry and a replay of a delivery in a shard other than the first land in its own
// shard, where a worker handles them.
const PASSWORD = 'queue shards inspector password';
const auth = `Basic ${Buffer.from(`admin:${PASSWORD}`).toString('base64')}`;
const SHARDS = 6;

let cluster: PrivateCluster;
let cdn: LocalCdn;
let receiver: Receiver;
let workers: RunningWorkers;
let server: RunningServer;
let env: Record<string, string>;
let base: string;

beforeAll(async () => {
  cluster = await startPrivateCluster({ primaries: 3, replicas: 1 });
  cdn = await startLocalCdn();
  env = {
    WEBHOOK_SECRETS: TEST_SECRET,
    REDIS_CLUSTER_NODES: cluster.seeds,
    QUEUE_PREFIX: `{aw-${randomUUID().slice(0, 8)}}`,
    QUEUE_SHARDS: String(SHARDS),
    CDN_URL: cdn.origin,
    DOWNLOAD_ALLOW_PRIVATE_IPS: 'true',
    DOWNLOAD_ATTEMPTS: '1',
    DOWNLOAD_BACKOFF_MS: '20',
    ADMIN_PASSWORD: PASSWORD,
    ADMIN_READ_ONLY: 'false',
  };
  const config = testConfig(env);
  env.AUDIO_DIR = config.audioDir;
  receiver = createReceiver(config, createLogger('silent'));
  workers = await startWorkers(testConfig(env), createLogger('silent'), { ca: cdn.ca });
  server = await serve(receiver.listener, 0, '127.0.0.1');
  base = `http://127.0.0.1:${server.port}`;
  await waitFor('the receiver’s Cluster connection ready', () =>
    Promise.resolve(receiver.redis.status === 'ready' ? true : undefined),
  );
}, 120_000);

afterAll(async () => {
  await server.close();
  await workers.close();
  await receiver.close();
  await cdn.close();
  await cluster.stop();
});

const layout = () => deliveryKeys(env.QUEUE_PREFIX ?? '', SHARDS);
const api = (path: string) => request(base).get(`/admin/api${path}`).set('Authorization', auth);
const act = (path: string) =>
  request(base).post(`/admin/api${path}`).set('Authorization', auth).set('Origin', base);
const detailPath = (event: string, id: string) =>
  `/deliveries/${encodeURIComponent(event)}/${encodeURIComponent(id)}`;

async function cli(...args: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(
    args,
    env,
    { out: (text) => (stdout += text) },
    { out: (text) => (stderr += text) },
  );
  return { code, stdout, stderr };
}

/** Posts as the provider does, sending a 503 again (a loaded machine's store past its deadline). */
async function deliver(body: unknown): Promise<number> {
  const { raw, headers } = signed(body);
  for (let attempt = 0; ; attempt++) {
    const answer = await request(receiver.listener).post('/webhooks').set(headers).send(raw);
    if (answer.status !== 503 || attempt === 19) return answer.status;
  }
}

interface Listed {
  readonly id: string;
  readonly event: string;
  readonly state: string;
}

/** Every delivery the inspector lists, page after page. */
async function listAll(query = ''): Promise<Listed[]> {
  const all: Listed[] = [];
  let cursor: string | null = null;
  do {
    const page = await api(
      `/deliveries?limit=7${query}${cursor === null ? '' : `&cursor=${cursor}`}`,
    ).expect(200);
    const body = page.body as { deliveries: Listed[]; next_cursor: string | null };
    all.push(...body.deliveries);
    cursor = body.next_cursor;
  } while (cursor !== null);
  return all;
}

it('deliveries in every shard: listed as one queue, failed --json across shards, retry and replay in their own shard', async () => {
  const shardOf = (event: string, id: string) => layout().placeOf(event, id).shard;
  const failing = Array.from({ length: 18 }, (_, i) => `shard-fails-${i}`);
  const handled = Array.from({ length: 12 }, (_, i) => `shard-handled-${i}`);
  // The CDN fails every download until a test gives a path its audio.
  cdn.fallback((_req, res) => res.writeHead(503).end());
  const statuses = await Promise.all([
    ...failing.map((id) =>
      deliver(
        sampleDelivery('audio.ready', {
          id,
          data: { audio_url: `${cdn.origin}/shards/${id}.mp3` },
        }),
      ),
    ),
    ...handled.map((id) => deliver(sampleDelivery('audio.failed', { id }))),
  ]);
  expect(statuses).toEqual(statuses.map(() => 202));
  const failedShards = new Set(failing.map((id) => shardOf('audio.ready', id)));
  expect(failedShards.size).toBeGreaterThanOrEqual(3);

  // The inspector lists all of them, over pages that cross shards, in their final states.
  let seen: Listed[] = [];
  const listed = await waitFor(
    () =>
      `the inspector listing 18 failed and 12 handled deliveries (it lists ${seen.map((d) => `${d.id}:${d.state}`).join(', ')})`,
    async () => {
      const all = await listAll();
      seen = all;
      const states = all.map((d) => `${d.id}:${d.state}`).sort();
      const wanted = [
        ...failing.map((id) => `${id}:failed`),
        ...handled.map((id) => `${id}:handled`),
      ].sort();
      return JSON.stringify(states) === JSON.stringify(wanted) ? all : undefined;
    },
    { timeoutMs: 60_000, everyMs: 250 },
  );
  expect(new Set(listed.map((d) => d.id)).size).toBe(30);
  expect((await listAll('&state=failed')).map((d) => d.id).sort()).toEqual([...failing].sort());

  // `failed --json`: every shard's failed jobs, one list.
  const failedJson = await cli('failed', '--json');
  expect(failedJson.code).toBe(0);
  const rows = JSON.parse(failedJson.stdout) as { data_id: string }[];
  expect(rows.map((row) => row.data_id).sort()).toEqual([...failing].sort());

  // Detail and retry of a failed delivery in a shard other than the first.
  const retried = failing.find((id) => shardOf('audio.ready', id) > 0) ?? '';
  const shard = shardOf('audio.ready', retried);
  const detail = await api(detailPath('audio.ready', retried)).expect(200);
  expect(detail.body).toMatchObject({ id: retried, state: 'failed' });
  const page = await request(base)
    .get(`/admin/deliveries/audio.ready/${encodeURIComponent(retried)}`)
    .set('Authorization', auth)
    .expect(200);
  expect(page.text).toContain(`/admin/queues/queue/shard${String(shard)}-deliveries/`);
  const board = await request(base)
    .get(`/admin/queues/api/queues?activeQueue=shard${String(shard)}-deliveries&status=failed`)
    .set('Authorization', auth)
    .expect(200);
  const boardQueues = (board.body as { queues: { name: string }[] }).queues.map((q) => q.name);
  expect(boardQueues).toEqual(
    expect.arrayContaining([
      ...Array.from({ length: SHARDS }, (_, n) => `shard${String(n)}-deliveries`),
      'forwards',
    ]),
  );
  cdn.route(`/shards/${retried}.mp3`, audio(Buffer.from('ID3 retried in its shard')));
  await act(`${detailPath('audio.ready', retried)}/retry`).expect(202);
  await waitFor(
    `${retried} handled after its retry in shard ${String(shard)}`,
    async () =>
      ((await api(detailPath('audio.ready', retried))).body as Listed).state === 'handled'
        ? true
        : undefined,
    { timeoutMs: 30_000, everyMs: 200 },
  );

  // `inspect` finds a delivery of another shard.
  const inspected = await cli('inspect', retried, '--json');
  expect(inspected.code).toBe(0);
  expect(JSON.parse(inspected.stdout)).toMatchObject({ id: retried, state: 'handled' });

  // A replay, by the inspector and by the CLI, lands in the delivery's own shard and is handled.
  const queues = createDeliveryQueues({
    connection: receiver.redis,
    prefix: env.QUEUE_PREFIX ?? '',
    shards: SHARDS,
  });
  try {
    const [byApi, byCli] = handled.filter((id) => shardOf('audio.failed', id) > 0);
    for (const [id, replay] of [
      [
        byApi ?? '',
        async () => (await act(`${detailPath('audio.failed', byApi ?? '')}/replay`)).status,
      ],
      [
        byCli ?? '',
        async () => {
          const done = await cli('replay', '--id', byCli ?? '', '--yes');
          return done.code === 0 && done.stdout.startsWith('1 delivery') ? 202 : done.code;
        },
      ],
    ] as const) {
      const own = queues[shardOf('audio.failed', id)];
      if (own === undefined) throw new Error(`no queue for ${id}`);
      // The archive is written as the job ends: a replay asked before finds nothing yet.
      await waitFor(`${id}'s replay queued`, async () =>
        (await replay()) === 202 ? true : undefined,
      );
      await waitFor(
        `${id}'s replay job completed in its own shard`,
        async () => {
          const jobs = await own.getJobs(['completed'], 0, -1);
          return jobs.some((job) => job.data.replay !== undefined && jobItemId(job.data) === id)
            ? true
            : undefined;
        },
        { timeoutMs: 30_000, everyMs: 200 },
      );
      const others = queues.filter((queue) => queue !== own);
      for (const other of others)
        expect(
          (await other.getJobs(['completed', 'wait', 'prioritized', 'active'], 0, -1)).filter(
            (job) => job.data.replay !== undefined && jobItemId(job.data) === id,
          ),
        ).toEqual([]);
    }
  } finally {
    await Promise.all(queues.map((queue) => queue.close()));
  }
}, 180_000);
