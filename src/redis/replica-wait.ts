import type { Redis } from 'ioredis';
import { groupCommit } from '../util/group-commit.js';
import type { RedisConnection } from './connections.js';

/**
 * Redis WAIT, shared. WAIT answers how many replicas acknowledged every write this connection
 * sent before it; so one WAIT serves every delivery stored before it was sent, and concurrent
 * requests share round trips (group commit) instead of queuing one blocking WAIT each behind
 * another. Resolves with the number of replicas that acknowledged within `timeoutMs`.
 */
export function createReplicaWait(
  connection: RedisConnection,
  replicas: number,
  timeoutMs: number,
): () => Promise<number> {
  // WAIT is refused with a Cluster at start-up (config/config.ts); here it is one server's.
  const redis = connection as Redis;
  return groupCommit(() => redis.wait(replicas, timeoutMs));
}
