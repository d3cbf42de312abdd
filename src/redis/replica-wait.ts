import type { Redis } from 'ioredis';
import type { RedisConnection } from './connections.js';

/**
 * Redis WAIT, shared. WAIT answers how many replicas acknowledged every write this connection
 * sent before it; so one WAIT serves every delivery stored before it was sent. At most one is in
 * flight: a delivery stored meanwhile joins the next, which all of them share (group commit), so
 * concurrent requests share round trips instead of queuing one blocking WAIT each behind another.
 * Resolves with the number of replicas that acknowledged within `timeoutMs`.
 */
export function createReplicaWait(
  connection: RedisConnection,
  replicas: number,
  timeoutMs: number,
): () => Promise<number> {
  // WAIT is refused with a Cluster at start-up (config.ts); here it is one server's connection.
  const redis = connection as Redis;
  let current: Promise<number> | undefined;
  let queued: Promise<number> | undefined;
  const send = (): Promise<number> => {
    const sent = redis.wait(replicas, timeoutMs);
    current = sent;
    const clear = () => {
      if (current === sent) current = undefined;
    };
    sent.then(clear, clear);
    return sent;
  };
  return () => {
    if (current === undefined) return send();
    queued ??= current
      .then(
        () => undefined,
        () => undefined,
      )
      .then(() => {
        queued = undefined;
        return send();
      });
    return queued;
  };
}
