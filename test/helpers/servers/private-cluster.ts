import { randomUUID } from 'node:crypto';
import {
  ask,
  clusterNodes,
  type ClusterNode,
  type PrivateCluster,
} from '../../../harness/private-cluster';

// The Cluster itself is started by harness/private-cluster.ts, which the bench and the soak share.
export {
  ask,
  clusterNodes,
  infoField,
  startPrivateCluster,
  waitFor,
  type ClusterNode,
  type PrivateCluster,
} from '../../../harness/private-cluster';

/** The node (primary) that serves `slot`, in `nodes`. */
export function ownerOf(nodes: readonly ClusterNode[], slot: number): ClusterNode | undefined {
  return nodes.find(
    (node) =>
      node.flags.includes('master') &&
      !node.flags.includes('fail') &&
      node.slots.some(([from, to]) => from <= slot && slot <= to),
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
