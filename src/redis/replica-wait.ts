import type { IRedisTransaction } from 'bullmq';

/** A plain ioredis pipeline in which MULTI is open: EXEC, then more commands, can follow it. */
interface OpenMulti {
  multi(): unknown;
  wait(replicas: number, timeoutMs: number): unknown;
  exec(): Promise<unknown[] | null>;
}

/**
 * A MULTI that is a pipeline of its own rather than ioredis's transaction, so that a command
 * can follow its EXEC in the same write (execThenWait). ioredis sends a pipeline, whole, over
 * one connection: on a Cluster, that of the primary holding its keys' slot.
 */
export function openMulti(client: { pipeline(): IRedisTransaction }): IRedisTransaction {
  const pipeline = client.pipeline();
  (pipeline as unknown as OpenMulti).multi();
  return pipeline;
}

type Reply = [Error | null, unknown];

/**
 * EXEC answered nil, not an array: Redis applied none of the transaction. Its adds are
 * refused (the sender retries), never read as answers: no reply is not "deduplicated".
 */
export class NilExecError extends Error {
  override name = 'NilExecError';
  constructor() {
    super('Redis applied none of the transaction: EXEC answered nil');
  }
}

/**
 * Redis WAIT, right after the MULTI's EXEC in the same pipeline: WAIT answers how many replicas
 * acknowledged every write its connection sent before it, so it covers every delivery in the
 * MULTI and is sent to the very server, over the very connection, that applied them (a WAIT
 * sent elsewhere, as a separate call, would count another connection's writes, or another
 * primary's on a Cluster). Resolves with the MULTI's replies, as a transaction's exec gives
 * them, and how many replicas acknowledged within `timeoutMs`.
 */
export async function execThenWait(
  transaction: IRedisTransaction,
  replicas: number,
  timeoutMs: number,
  /**
   * Awaited when a queued command was answered MOVED (the slot has another node now; an ASK, a
   * slot being migrated, is not one a new map of the slots resolves).
   * On a Cluster, ioredis follows a redirection, and refreshes its slot map, only for a pipeline
   * it may send again whole, and WAIT's reply rules this one out: without a refresh here, every
   * later enqueue of that slot would go to the same wrong node.
   */
  onRedirected?: () => Promise<void>,
): Promise<{ replies: Reply[]; acknowledged: number }> {
  const pipeline = transaction as unknown as OpenMulti;
  // With MULTI open, ioredis's exec queues EXEC instead of sending.
  void pipeline.exec();
  pipeline.wait(replicas, timeoutMs);
  const results = ((await pipeline.exec()) ?? []) as Reply[];
  const [execError, inner] = results.at(-2) ?? [new Error('no EXEC reply'), undefined];
  const [waitError, acknowledged] = results.at(-1) ?? [null, 0];
  // A primary that is a replica now (it came back after its failover) refuses each queued
  // command with MOVED and the EXEC with EXECABORT: the MOVED is what says where to go.
  const moved = results.find(([error]) => error !== null && /^MOVED /.test(error.message));
  if (moved !== undefined) await onRedirected?.();
  if (execError !== null) throw moved?.[0] ?? execError;
  if (waitError !== null) throw waitError;
  if (!Array.isArray(inner)) throw new NilExecError();
  const replies = inner.map((value: unknown): Reply =>
    value instanceof Error ? [value, null] : [null, value],
  );
  return { replies, acknowledged: Number(acknowledged) };
}
