import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sampleDelivery } from '../../../src/provider-spec/sample-delivery';
import { withDeadline } from '../../../src/util/deadline';
import { audio, startLocalCdn, type LocalCdn } from '../../../harness/local-cdn';
import { freePort, type PrivateRedis } from '../../../harness/private-redis';
import { postSigned } from '../forward-test-bed';
import { downloadsFrom, serviceSettings, webOn } from '../service-settings';
import { spawnService, type ServiceProcess } from '../spawn-service';
import {
  ask,
  clusterNodes,
  infoField,
  ownerOf,
  startPrivateCluster,
  waitFor,
  type ClusterNode,
  type PrivateCluster,
} from './private-cluster';

/**
 * What the tests of a Cluster primary lost share: a Cluster of three primaries with a replica
 * each and a CDN (started once per file), the service on it as production runs it, senders that
 * act as the provider does, and the wait for a replica's promotion.
 */

/** A bound that only says "it does not hang", given to each wait with a message of its own. */
export const HANG_MS = 60_000;

/** The file's Cluster and CDN: started before its tests, stopped after them. */
export function useFailoverCluster(): { cluster(): PrivateCluster; cdn(): LocalCdn } {
  let cluster: PrivateCluster | undefined;
  let cdn: LocalCdn | undefined;
  beforeAll(async () => {
    cdn = await startLocalCdn();
    cdn.fallback(audio(Buffer.from('failover audio')));
    cluster = await startPrivateCluster({ primaries: 3, replicas: 1, nodeTimeoutMs: 1_000 });
  }, 60_000);
  afterAll(async () => {
    await cdn?.close();
    await cluster?.stop();
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the Cluster and the CDN start in beforeAll');
    return value;
  };
  return { cluster: () => started(cluster), cdn: () => started(cdn) };
}

/** Receivers and workers on the Cluster, started and connected; a delivery's stored file. */
export interface ServicesOnCluster {
  readonly ports: readonly number[];
  readonly receivers: readonly ServiceProcess[];
  readonly workers: readonly ServiceProcess[];
  readonly audioDir: string;
  /** Whether the delivery `id` is handled: its stored file is there. */
  readonly handled: (id: string) => boolean;
}

/**
 * `receivers` receiver processes (each on a port of its own) and `workers` worker processes on
 * the Cluster under `settings` (QUEUE_PREFIX and more); the receivers also get `receiverSettings`.
 * Resolves once each has started and connected to the Cluster.
 */
export async function startOnCluster(
  cluster: PrivateCluster,
  cdn: LocalCdn,
  {
    receivers = 1,
    workers = 1,
    settings,
    receiverSettings = {},
  }: {
    receivers?: number;
    workers?: number;
    settings: Record<string, string>;
    receiverSettings?: Record<string, string>;
  },
): Promise<ServicesOnCluster> {
  const audioDir = mkdtempSync(join(tmpdir(), 'aw-cluster-failover-'));
  const caFile = join(mkdtempSync(join(tmpdir(), 'aw-ca-')), 'ca.pem');
  writeFileSync(caFile, cdn.ca);
  const common = serviceSettings({
    REDIS_CLUSTER_NODES: cluster.seeds,
    // The Cluster's nodes are the seeds; only credentials would come from here, and it has none.
    REDIS_URL: 'redis://127.0.0.1:1',
    ...settings,
  });
  const ports: number[] = [];
  for (let i = 0; i < receivers; i++) ports.push(await freePort());
  const receiving = ports.map((port) =>
    spawnService({ ...common, ...webOn(port), ...receiverSettings }),
  );
  const working = Array.from({ length: workers }, () =>
    spawnService({
      ...common,
      ROLE: 'worker',
      AUDIO_DIR: audioDir,
      ...downloadsFrom(cdn.origin),
      NODE_EXTRA_CA_CERTS: caFile,
      // A job whose worker lost its lock in the failover is taken over within seconds.
      WORKER_LOCK_MS: '2000',
    }),
  );
  await withDeadline(
    Promise.all(
      [...receiving, ...working].map(async (service) => {
        await service.waitForLog('audio-webhooks started');
        await service.waitForLog('Redis connected');
      }),
    ),
    HANG_MS,
    'every receiver and worker started and connected to the Cluster',
  );
  return {
    ports,
    receivers: receiving,
    workers: working,
    audioDir,
    handled: (id) => existsSync(join(audioDir, `${id}.json`)),
  };
}

/** A delivery answered 2xx: when the attempt so answered was sent, when its answer came, where. */
export interface Acknowledged {
  readonly id: string;
  readonly sentAt: number;
  readonly ackedAt: number;
  readonly port: number;
}

/** Senders at work until `stop()`, which resolves once each one's last POST is answered. */
export interface Senders {
  /** Each delivery answered 2xx, by id. */
  readonly acknowledged: Map<string, Acknowledged>;
  /** Answers other than 2xx, by status. */
  readonly refused: Map<number, number>;
  /** The body sent for each id. */
  readonly bodies: Map<string, unknown>;
  stop(): Promise<void>;
}

/**
 * `count` senders, each sending a new `audio.ready` delivery `<idPrefix><n>` every `everyMs`
 * at most, over `ports` in turn, as the provider does: the same delivery again until it is
 * answered 2xx. Each POST has HANG_MS (a POST that hangs fails with its port).
 */
export function sendAsProvider({
  ports,
  count,
  everyMs,
  idPrefix,
  cdnOrigin,
}: {
  ports: readonly number[];
  count: number;
  everyMs: number;
  idPrefix: string;
  cdnOrigin: string;
}): Senders {
  const acknowledged = new Map<string, Acknowledged>();
  const refused = new Map<number, number>();
  const bodies = new Map<string, unknown>();
  let next = 0;
  let stopping = false;
  // Set from outside the senders' loops: read through a call, which TypeScript never narrows.
  const stopped = () => stopping;
  const sending = Promise.all(
    Array.from({ length: count }, async (_unused, sender) => {
      let attempt = sender;
      while (!stopped()) {
        const id = `${idPrefix}${String(next++)}`;
        const body = sampleDelivery('audio.ready', { id, cdnOrigin });
        bodies.set(id, body);
        for (let acked = false; !acked && !stopped();) {
          const sentAt = Date.now();
          const port = ports[attempt++ % ports.length] ?? 0;
          const status = await withDeadline(postSigned(port, body), HANG_MS, `a POST to ${port}`);
          acked = status >= 200 && status < 300;
          if (acked) acknowledged.set(id, { id, sentAt, ackedAt: Date.now(), port });
          else refused.set(status, (refused.get(status) ?? 0) + 1);
          const pause = everyMs - (Date.now() - sentAt);
          if (pause > 0) await new Promise((resolve) => setTimeout(resolve, pause));
        }
      }
    }),
  );
  sending.catch(() => undefined);
  return {
    acknowledged,
    refused,
    bodies,
    async stop() {
      stopping = true;
      await sending;
    },
  };
}

/**
 * SIGKILLs `primary` and resolves once `survivor` sees the replica on `replicaPort` serve `slot`
 * and the Cluster's state is ok again.
 */
export async function killAndAwaitPromotion(
  primary: PrivateRedis,
  { replicaPort, survivorPort, slot }: { replicaPort: number; survivorPort: number; slot: number },
): Promise<void> {
  await primary.stop();
  await waitFor(
    `the replica on ${String(replicaPort)} promoted to serve slot ${String(slot)}, cluster_state:ok`,
    async () => {
      const seen = await clusterNodes(survivorPort);
      const state = infoField(await ask(survivorPort, 'CLUSTER', 'INFO'), 'cluster_state');
      return ownerOf(seen, slot)?.port === replicaPort && state === 'ok' ? true : undefined;
    },
    { timeoutMs: HANG_MS, everyMs: 50 },
  );
}

/** A queue prefix whose slot is served by a live primary with a live replica, and who serves it. */
export interface FailoverTarget {
  readonly prefix: string;
  readonly slot: number;
  readonly owner: ClusterNode;
  readonly replica: ClusterNode;
  /** A live node other than those two, to ask while they change roles. */
  readonly survivor: ClusterNode;
}

/**
 * A prefix `{aw-…}` whose slot a failover can move: asked of the Cluster's live nodes only, since
 * an earlier test in the file may have stopped one (a command to it fails "Connection is closed"),
 * and served by none of the nodes in `besides`. A shard failed over a moment ago is one to leave
 * out: Redis refuses its next manual failover until every primary has seen the new roles and
 * twice the node timeout has passed since it voted for that shard (the failover then times out).
 */
export async function failoverTarget(
  cluster: PrivateCluster,
  besides: ReadonlySet<string> = new Set(),
): Promise<FailoverTarget> {
  for (const node of cluster.nodes) {
    const seen = await clusterNodes(node.port).catch(() => undefined);
    if (seen === undefined) continue;
    const live = seen.filter((n) => !n.flags.includes('fail') && !n.flags.includes('fail?'));
    // Bounded: each primary serves about a third of the slots, so a few tries find one.
    for (let tries = 0; tries < 100; tries++) {
      const prefix = `{aw-${randomUUID().slice(0, 8)}}`;
      const slot = Number(await ask(node.port, 'CLUSTER', 'KEYSLOT', prefix));
      const owner = ownerOf(live, slot);
      const replica = live.find((n) => owner !== undefined && n.primaryId === owner.id);
      const survivor = live.find((n) => n !== owner && n !== replica);
      if (owner && replica && survivor && !besides.has(owner.id) && !besides.has(replica.id))
        return { prefix, slot, owner, replica, survivor };
    }
  }
  throw new Error('no live primary with a live replica in the Cluster');
}
