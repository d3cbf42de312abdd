import { ask } from '../../../harness/private-cluster';

// The Cluster itself is started by harness/private-cluster.ts, which the bench and the soak share.
export {
  ask,
  infoField,
  startPrivateCluster,
  waitFor,
  type PrivateCluster,
} from '../../../harness/private-cluster';

/** One line of CLUSTER NODES. */
export interface ClusterNode {
  readonly id: string;
  readonly port: number;
  readonly flags: readonly string[];
  /** The primary's id, for a replica; undefined for a primary. */
  readonly primaryId: string | undefined;
  /** Slot ranges served, inclusive. */
  readonly slots: readonly (readonly [number, number])[];
}

/** CLUSTER NODES as seen by the server on `port`. */
export async function clusterNodes(port: number): Promise<ClusterNode[]> {
  const text = String(await ask(port, 'CLUSTER', 'NODES'));
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const [id = '', address = '', flags = '', primary = '', , , , , ...slots] = line.split(' ');
      return {
        id,
        port: Number(/:(\d+)@/.exec(address)?.[1]),
        flags: flags.split(','),
        primaryId: primary === '-' ? undefined : primary,
        slots: slots
          .filter((range) => !range.startsWith('['))
          .map((range) => {
            const [from, to = from] = range.split('-').map(Number);
            return [from ?? 0, to ?? 0] as const;
          }),
      };
    });
}

/** The node (primary) that serves `slot`, in `nodes`. */
export function ownerOf(nodes: readonly ClusterNode[], slot: number): ClusterNode | undefined {
  return nodes.find(
    (node) =>
      node.flags.includes('master') &&
      !node.flags.includes('fail') &&
      node.slots.some(([from, to]) => from <= slot && slot <= to),
  );
}
