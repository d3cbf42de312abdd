import { randomUUID } from 'node:crypto';
import { request } from 'undici';
import { deliveryKeys } from '../../src/queue/delivery-keys';
import { withDeadline } from '../../src/util/deadline';
import { ask, clusterNodes, infoField, ownerOf, waitFor } from '../helpers/servers/private-cluster';
import {
  HANG_MS,
  killAndAwaitPromotion,
  sendAsProvider,
  startOnCluster,
  useFailoverCluster,
} from '../helpers/servers/cluster-failover';
import { signed } from '../helpers/test-receiver';
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
const bed = useFailoverCluster();

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

// The test's bound (470 s) is past the sum of its waits (HANG_MS each: the start, before the
// kill, the promotion, the restart, after it, the handling, the re-sends), so the wait that gives
// up is the one named in the failure.
it('a primary SIGKILLed under load with REDIS_WAIT_REPLICAS=1: every 2xx is handled, every re-send a duplicate', async () => {
  const prefix = `{aw-${randomUUID().slice(0, 8)}}`;
  const layout = deliveryKeys(prefix, 6);
  // The primary that holds shard 1, and its replica.
  const slot = calculateSlot(`${layout.prefixes[1] ?? ''}:deliveries:wait`);
  const cluster = bed.cluster();
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

  const {
    ports: [port = 0],
    receivers,
    handled,
  } = await startOnCluster(cluster, bed.cdn(), {
    settings: { QUEUE_PREFIX: prefix, QUEUE_SHARDS: '6' },
    receiverSettings: {
      REDIS_WAIT_REPLICAS: '1',
      // Two CPU-bound neighbours can hold a replica's acknowledgement past the default.
      REDIS_WAIT_TIMEOUT_MS: '2000',
    },
  });
  const senders = sendAsProvider({
    ports: [port],
    count: SENDERS,
    everyMs: SEND_EVERY_MS,
    idPrefix: 'sf-',
    cdnOrigin: bed.cdn().origin,
  });
  const { acknowledged, refused, bodies } = senders;
  try {
    await waitFor(
      () => `${BEFORE} deliveries acknowledged before the kill (${acknowledged.size} so far)`,
      () => Promise.resolve(acknowledged.size >= BEFORE ? true : undefined),
      { timeoutMs: HANG_MS },
    );
    await killAndAwaitPromotion(primary, { replicaPort, survivorPort: survivor.port, slot });
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
      [...acknowledged.values()].filter(
        ({ id, sentAt }) =>
          sentAt >= promotedAt && killedShards.includes(layout.placeOf('audio.ready', id).shard),
      ).length;
    await waitFor(
      () =>
        `${AFTER} deliveries of the killed primary's shards acknowledged after its return ` +
        `(${inKilledShards()} so far; answers other than 2xx ${JSON.stringify(Object.fromEntries(refused))}; ` +
        `the receiver's last warnings: ${JSON.stringify(
          (receivers[0]?.logs ?? []).slice(-4).map((line) => JSON.stringify(line).slice(0, 400)),
        )})`,
      () => Promise.resolve(inKilledShards() >= AFTER ? true : undefined),
      { timeoutMs: HANG_MS },
    );
    await senders.stop();

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
    await senders.stop().catch(() => undefined);
  }
}, 470_000);
