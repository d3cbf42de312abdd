import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { deliveryKeys } from '../../src/queue/delivery-keys';
import { sampleDelivery } from '../../src/provider-spec/sample-delivery';
import { withDeadline } from '../../src/util/deadline';
import { audio, startLocalCdn, type LocalCdn } from '../../harness/local-cdn';
import { freePort } from '../../harness/private-redis';
import {
  ask,
  clusterNodes,
  infoField,
  ownerOf,
  startPrivateCluster,
  waitFor,
  type PrivateCluster,
} from '../helpers/servers/private-cluster';
import { spawnService } from '../helpers/spawn-service';
import { signed, TEST_SECRET } from '../helpers/test-receiver';
import calculateSlot from 'cluster-key-slot';

// QUEUE_SHARDS=6 with REDIS_WAIT_REPLICAS=1 on a Cluster of three primaries, each with a
// replica; a receiver and a worker run as production runs them. A primary is SIGKILLed while
// deliveries arrive and its replica takes over (the killed server then comes back as its
// replica): every delivery answered 2xx is handled (its stored file exists), and each one sent
// again afterwards is answered duplicate.
const SENDERS = 3;
/** Each sender's pace: at most 3 × 1,000 / 40 = 75 deliveries a second. */
const SEND_EVERY_MS = 40;
/** Acknowledged deliveries before the kill, and after the promotion in the killed one's shards. */
const BEFORE = 60;
const AFTER = 30;
/** A bound that only says "it does not hang", given to each wait with a message of its own. */
const HANG_MS = 30_000;

let cluster: PrivateCluster;
let cdn: LocalCdn;

beforeAll(async () => {
  cdn = await startLocalCdn();
  cdn.fallback(audio(Buffer.from('sharded failover audio')));
  cluster = await startPrivateCluster({ primaries: 3, replicas: 1, nodeTimeoutMs: 1_000 });
}, 60_000);
afterAll(async () => {
  await cdn.close();
  await cluster.stop();
});

/** POSTs a delivery; its status and body (`duplicate` tells a re-send). */
async function post(port: number, body: unknown) {
  const { raw, headers } = signed(body);
  const answer = await request(`http://127.0.0.1:${port}/webhooks`, {
    method: 'POST',
    headers,
    body: raw,
  });
  const text = await answer.body.text();
  return { status: answer.statusCode, duplicate: text.includes('"duplicate":true') };
}

it('a primary SIGKILLed under load with REDIS_WAIT_REPLICAS=1: every 2xx is handled, every re-send a duplicate', async () => {
  const prefix = `{aw-${randomUUID().slice(0, 8)}}`;
  const layout = deliveryKeys(prefix, 6);
  // The primary that holds shard 1, and its replica.
  const slot = calculateSlot(`${layout.prefixes[1] ?? ''}:deliveries:wait`);
  const nodes = await clusterNodes(cluster.nodes[0]!.port);
  const owner = ownerOf(nodes, slot);
  const primary = cluster.nodes.find((node) => node.port === owner?.port);
  const replicaPort = nodes.find((node) => node.primaryId === owner?.id)?.port;
  const survivor = cluster.nodes.find(
    (node) => node.port !== owner?.port && node.port !== replicaPort,
  )!;
  if (primary === undefined || replicaPort === undefined)
    throw new Error(`no primary with a replica serves slot ${slot}`);
  // The shards whose slots the killed primary holds.
  const killedShards = layout.prefixes
    .map((shardPrefix, shard) => ({ shard, slot: calculateSlot(`${shardPrefix}:x`) }))
    .filter(({ slot: each }) => ownerOf(nodes, each)?.port === primary.port)
    .map(({ shard }) => shard);

  const audioDir = mkdtempSync(join(tmpdir(), 'aw-shards-failover-'));
  const caFile = join(mkdtempSync(join(tmpdir(), 'aw-ca-')), 'ca.pem');
  writeFileSync(caFile, cdn.ca);
  const common = {
    WEBHOOK_SECRETS: TEST_SECRET,
    REDIS_CLUSTER_NODES: cluster.seeds,
    QUEUE_PREFIX: prefix,
    QUEUE_SHARDS: '6',
  };
  const port = await freePort();
  const receiver = spawnService({
    ...common,
    ROLE: 'web',
    WEB_CONCURRENCY: '1',
    HOST: '127.0.0.1',
    PORT: String(port),
    REDIS_WAIT_REPLICAS: '1',
    // Two CPU-bound neighbours can hold a replica's acknowledgement past the default.
    REDIS_WAIT_TIMEOUT_MS: '2000',
  });
  const worker = spawnService({
    ...common,
    ROLE: 'worker',
    AUDIO_DIR: audioDir,
    CDN_URL: cdn.origin,
    DOWNLOAD_ALLOW_PRIVATE_IPS: 'true',
    NODE_EXTRA_CA_CERTS: caFile,
    // A job whose worker lost its lock in the failover is taken over within seconds.
    WORKER_LOCK_MS: '2000',
  });
  await withDeadline(
    Promise.all(
      [receiver, worker].map(async (service) => {
        await service.waitForLog('audio-webhooks started');
        await service.waitForLog('Redis connected');
      }),
    ),
    HANG_MS,
    'the receiver and the worker started and connected to the Cluster',
  );

  /** Each delivery answered 2xx, by id, with when it was sent. */
  const acknowledged = new Map<string, number>();
  const bodies = new Map<string, unknown>();
  const handled = (id: string) => existsSync(join(audioDir, `${id}.json`));
  const refused = new Map<number, number>();
  let next = 0;
  let stopping = false;
  const stopped = () => stopping;
  const senders = Array.from({ length: SENDERS }, async () => {
    while (!stopped()) {
      const id = `sf-${String(next++)}`;
      const body = sampleDelivery('audio.ready', { id, cdnOrigin: cdn.origin });
      bodies.set(id, body);
      // As the provider does: the same delivery again until it is answered 2xx.
      for (let acked = false; !acked && !stopped();) {
        const started = Date.now();
        const { status } = await withDeadline(post(port, body), HANG_MS, `a POST of ${id}`);
        acked = status >= 200 && status < 300;
        if (acked) acknowledged.set(id, started);
        else refused.set(status, (refused.get(status) ?? 0) + 1);
        const pause = SEND_EVERY_MS - (Date.now() - started);
        if (pause > 0) await new Promise((resolve) => setTimeout(resolve, pause));
      }
    }
  });
  const sending = Promise.all(senders);
  sending.catch(() => undefined);
  try {
    await waitFor(
      () => `${BEFORE} deliveries acknowledged before the kill (${acknowledged.size} so far)`,
      () => Promise.resolve(acknowledged.size >= BEFORE ? true : undefined),
      { timeoutMs: HANG_MS },
    );
    await primary.stop();
    await waitFor(
      `the replica on ${replicaPort} promoted to serve slot ${slot}, cluster_state:ok`,
      async () => {
        const seen = await clusterNodes(survivor.port);
        const state = infoField(await ask(survivor.port, 'CLUSTER', 'INFO'), 'cluster_state');
        return ownerOf(seen, slot)?.port === replicaPort && state === 'ok' ? true : undefined;
      },
      { timeoutMs: HANG_MS, everyMs: 50 },
    );
    // With its only replica promoted, the shard has none to acknowledge a write: its deliveries
    // are answered 503 until a replica is back. The killed server restarts (as its pod would),
    // rejoins by its nodes.conf, and becomes the new primary's replica.
    await primary.start();
    await waitFor(
      `the restarted ${primary.port} a synced replica of ${replicaPort}`,
      async () => {
        const info = await ask(primary.port, 'INFO', 'replication');
        return infoField(info, 'role') === 'slave' &&
          infoField(info, 'master_port') === String(replicaPort) &&
          infoField(info, 'master_link_status') === 'up'
          ? true
          : undefined;
      },
      { timeoutMs: HANG_MS, everyMs: 100 },
    );
    const promotedAt = Date.now();
    const inKilledShards = () =>
      [...acknowledged].filter(
        ([id, sentAt]) =>
          sentAt >= promotedAt && killedShards.includes(layout.placeOf('audio.ready', id).shard),
      ).length;
    await waitFor(
      () =>
        `${AFTER} deliveries of the killed primary's shards acknowledged after its return ` +
        `(${inKilledShards()} so far; answers other than 2xx ${JSON.stringify(Object.fromEntries(refused))}; ` +
        `the receiver's last warnings: ${JSON.stringify(
          receiver.logs.slice(-4).map((line) => JSON.stringify(line).slice(0, 400)),
        )})`,
      () => Promise.resolve(inKilledShards() >= AFTER ? true : undefined),
      { timeoutMs: HANG_MS },
    );
    stopping = true;
    await sending;

    // Every delivery answered 2xx is handled: none was lost with the primary.
    const ids = [...acknowledged.keys()];
    await waitFor(
      () =>
        `the ${ids.length} acknowledged deliveries handled (missing: ${ids
          .filter((id) => !handled(id))
          .slice(0, 10)
          .join(', ')})`,
      () => Promise.resolve(ids.every(handled) ? true : undefined),
      { timeoutMs: HANG_MS, everyMs: 250 },
    );
    // Each one sent again is a duplicate: its mark survived in its shard's slot.
    const again = new Map<string, boolean>();
    for (let at = 0; at < ids.length; at += 25)
      await Promise.all(
        ids.slice(at, at + 25).map(async (id) => {
          for (let attempt = 0; attempt < 20; attempt++) {
            const answer = await withDeadline(post(port, bodies.get(id)), HANG_MS, `re-send ${id}`);
            if (answer.status >= 200 && answer.status < 300) {
              again.set(id, answer.duplicate);
              return;
            }
          }
        }),
      );
    process.stderr.write(
      `queue-shards-failover: ${ids.length} acknowledged (killed primary's shards ${killedShards.join(', ')}), refused ${JSON.stringify(Object.fromEntries(refused))}\n`,
    );
    expect(ids.filter((id) => again.get(id) !== true)).toEqual([]);
  } finally {
    stopping = true;
  }
}, 150_000);
