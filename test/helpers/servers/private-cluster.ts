import type { ClusterNode } from '../../../harness/private-cluster';

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
