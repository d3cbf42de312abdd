import { Cluster } from 'ioredis';
import { withDeadline } from '../util/deadline.js';
import {
  createCliRedis,
  dropConnection,
  type RedisConfig,
  type RedisConnection,
} from './connections.js';

/**
 * Why a process holds back its writes to Redis:
 * - `eviction_policy`: Redis may evict keys (anything but `noeviction`), the dedupe marks first;
 * - `memory_reserve`: used memory reached the part of maxmemory kept for the workers' drain;
 * - `oom`, `readonly`, `loading`, `misconf`: Redis refused a write (at maxmemory; a replica;
 *   loading its data set; a failed snapshot with stop-writes-on-bgsave-error).
 */
export type HoldReason =
  'eviction_policy' | 'memory_reserve' | 'oom' | 'readonly' | 'loading' | 'misconf';

export const HOLD_REASONS: readonly HoldReason[] = [
  'eviction_policy',
  'memory_reserve',
  'oom',
  'readonly',
  'loading',
  'misconf',
];

const REFUSALS: Readonly<Record<string, HoldReason>> = {
  OOM: 'oom',
  READONLY: 'readonly',
  LOADING: 'loading',
  MISCONF: 'misconf',
};

/** Whether Redis itself refused (not a reading of the gate's own). */
export const isRefusal = (reason: HoldReason | undefined): boolean =>
  reason !== undefined && Object.values(REFUSALS).includes(reason);

/** The refusal an error's message starts with, if any. */
function refusalWord(error: unknown): HoldReason | undefined {
  if (!(error instanceof Error)) return undefined;
  const word = /^(?:EXECABORT [^:]*: )?([A-Z]+)\b/.exec(error.message)?.[1];
  return word !== undefined && word in REFUSALS ? REFUSALS[word] : undefined;
}

/**
 * The kind of refusal a Redis error reply is (its first word), or undefined for any other error.
 * A MULTI that Redis refused at queue time names the refusal among its previous errors, which are
 * read one level deep (ioredis may list the transaction's own error among them).
 */
export function refusalOf(error: unknown): HoldReason | undefined {
  const own = refusalWord(error);
  if (own !== undefined || !(error instanceof Error)) return own;
  const previous = (error as { previousErrors?: unknown }).previousErrors;
  return Array.isArray(previous)
    ? previous.map(refusalWord).find((reason) => reason !== undefined)
    : undefined;
}

/** What INFO memory says of the server (for a Cluster, of its fullest primary). */
export interface RedisMemory {
  readonly policy: string;
  readonly usedBytes: number;
  /** 0: no limit. */
  readonly maxBytes: number;
}

function parseMemory(info: string): RedisMemory {
  const field = (name: string) => new RegExp(`^${name}:(.*?)\\r?$`, 'm').exec(info)?.[1] ?? '';
  return {
    policy: field('maxmemory_policy'),
    usedBytes: Number(field('used_memory')) || 0,
    maxBytes: Number(field('maxmemory')) || 0,
  };
}

const fullness = (m: RedisMemory) => (m.maxBytes > 0 ? m.usedBytes / m.maxBytes : 0);

/**
 * INFO memory, not CONFIG GET: managed Redis services often rename or forbid CONFIG, and INFO
 * carries the policy too. A Cluster is as safe as its least safe primary.
 */
export async function readRedisMemory(redis: RedisConnection): Promise<RedisMemory> {
  const nodes = redis instanceof Cluster ? redis.nodes('master') : [redis];
  const readings = await Promise.all(
    nodes.map(async (node) => parseMemory(await node.info('memory'))),
  );
  return (
    readings.find((m) => m.policy !== 'noeviction') ??
    readings.reduce((worst, m) => (fullness(m) > fullness(worst) ? m : worst))
  );
}

/** Redis may evict keys: the start of a process is refused, with one line naming the setting. */
export class EvictionPolicyError extends Error {
  override name = 'EvictionPolicyError';
}

export function policyProblem(policy: string): string {
  return `Redis's maxmemory-policy is ${policy || 'unknown'}: it must be noeviction, else Redis evicts the dedupe marks and queued deliveries under memory pressure (CONFIG SET maxmemory-policy noeviction, and in redis.conf)`;
}

/**
 * At start, before any role begins: refuses an eviction policy other than `noeviction`, with one
 * line. A Redis that does not answer within `ms` is left to the running check (WriteGate), which
 * holds deliveries back until the policy is right.
 */
export async function checkEvictionPolicy(config: RedisConfig, ms: number): Promise<void> {
  const redis = createCliRedis(config);
  redis.on('error', () => undefined); // unreachable: the roles' own connections report it
  try {
    const memory = await withDeadline(
      redis.connect().then(() => readRedisMemory(redis)),
      ms,
      'Redis',
    ).catch(() => undefined);
    if (memory !== undefined && memory.policy !== 'noeviction')
      throw new EvictionPolicyError(policyProblem(memory.policy));
  } finally {
    dropConnection(redis);
  }
}
