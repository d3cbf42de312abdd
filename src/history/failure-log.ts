import type { RedisConnection } from '../redis/connections.js';
import type { AudioFailedEvent } from '../provider-spec/events.js';
import { decodeEntry, encodeEntry, entryField, type KeptEntry } from './entry-codec.js';

/**
 * A recorded `audio.failed` (entry-codec.ts): its id (cut past 64 bytes, `id_truncated`), when
 * it was received, and its `data` as the provider wrote it, or `payload: null` with
 * `payload_bytes` when that was too long to keep. A type, not an interface: the CLI prints
 * entries as they are (rows need an index).
 */
export type LoggedFailure = KeptEntry<'received_at'>;

export interface FailureLog {
  /**
   * Logs an `audio.failed`; false when this id is already recorded. `dataText`: its `data`
   * as the provider wrote it (HookContext's `delivery.dataText`); without it the entry keeps
   * `event.data` re-serialised.
   */
  record(event: AudioFailedEvent, receivedAt: string, dataText?: string): Promise<boolean>;
  /** Newest first. */
  list(): Promise<LoggedFailure[]>;
}

/** How many failures are kept; the oldest go first. */
export const MAX_LOGGED_FAILURES = 10_000;

// One script, so a crash can never leave an index entry without its entry, or the log unbounded.
const RECORD = `
if redis.call('ZADD', KEYS[1], 'NX', ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
local excess = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[4])
if excess > 0 then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, excess - 1)
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, excess - 1)
  redis.call('HDEL', KEYS[2], unpack(oldest))
end
return 1`;

/**
 * Recorded `audio.failed` events under the prefix: a sorted set of entry keys by time, and a
 * hash of entries by the same keys (entryField: the id, or its digest when it is long).
 */
export function createFailureLog(
  redis: RedisConnection,
  prefix: string,
  max = MAX_LOGGED_FAILURES,
): FailureLog {
  const index = `${prefix}:audio-failures`;
  const records = `${prefix}:audio-failures:records`;
  return {
    async record(event, receivedAt, dataText) {
      const { id } = event.data;
      const added = await redis.eval(
        RECORD,
        2,
        index,
        records,
        Date.parse(receivedAt),
        entryField(id),
        encodeEntry(id, ['received_at', receivedAt], dataText ?? JSON.stringify(event.data)),
        max,
      );
      return added === 1;
    },
    async list() {
      const keys = await redis.zrevrange(index, 0, -1);
      if (keys.length === 0) return [];
      const values = await redis.hmget(records, ...keys);
      return keys.flatMap((key, i) => {
        const value = values[i];
        return value === null || value === undefined
          ? []
          : [decodeEntry(value, key, 'received_at')];
      });
    },
  };
}
