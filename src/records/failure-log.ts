import type { RedisConnection } from '../redis/connections.js';
import type { AudioFailedEvent } from '../webhooks/events.js';

// A type, not an interface: records are printed by the CLI as they are (rows need an index).
export type RecordedFailure = {
  readonly id: string;
  readonly received_at: string;
  readonly payload: AudioFailedEvent['data'];
};

export interface FailureLog {
  /** Records an `audio.failed`; false when this id is already recorded. */
  record(event: AudioFailedEvent, receivedAt: string): Promise<boolean>;
  /** Newest first. */
  list(): Promise<RecordedFailure[]>;
}

/** How many failures are kept; the oldest go first. */
export const MAX_RECORDED_FAILURES = 10_000;

// One script, so a crash can never leave an index entry without its record, or the log unbounded.
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

/** Recorded `audio.failed` events: a sorted set by time and a hash of records, under the prefix. */
export function createFailureLog(
  redis: RedisConnection,
  prefix: string,
  max = MAX_RECORDED_FAILURES,
): FailureLog {
  const index = `${prefix}:audio-failures`;
  const records = `${prefix}:audio-failures:records`;
  return {
    async record(event, receivedAt) {
      const record: RecordedFailure = {
        id: event.data.id,
        received_at: receivedAt,
        payload: event.data,
      };
      const score = Date.parse(receivedAt);
      const added = await redis.eval(
        RECORD,
        2,
        index,
        records,
        score,
        event.data.id,
        JSON.stringify(record),
        max,
      );
      return added === 1;
    },
    async list() {
      const ids = await redis.zrevrange(index, 0, -1);
      if (ids.length === 0) return [];
      const values = await redis.hmget(records, ...ids);
      return values.flatMap((v) => (v === null ? [] : [JSON.parse(v) as RecordedFailure]));
    },
  };
}
