/** ioredis's own slot function (its dependency): the Cluster slot a key hashes to. */
declare module 'cluster-key-slot' {
  export default function calculateSlot(key: string): number;
}
