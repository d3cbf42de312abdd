/** The Cluster slot a key hashes to: ioredis's own function, pinned to the version ioredis pins, so a shard's tag lands in the slot ioredis routes it to. */
declare module 'cluster-key-slot' {
  export default function calculateSlot(key: string): number;
}
