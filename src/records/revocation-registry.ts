import type { RedisConnection } from '../redis/connections.js';
import type { KeyRevokedEvent } from '../webhooks/events.js';

// A type, not an interface: records are printed by the CLI as they are (rows need an index).
export type RevokedKey = {
  readonly id: string;
  /** When the receiver accepted the revocation, ISO 8601. */
  readonly revoked_at: string;
  readonly payload: KeyRevokedEvent['data'];
};

export interface RevocationRegistry {
  /** Records a revocation; false when it was already recorded (a re-run job changes nothing). */
  record(event: KeyRevokedEvent, revokedAt: string): Promise<boolean>;
  /** For application code: refuse work for a revoked key. */
  isKeyRevoked(id: string): Promise<boolean>;
  /** Newest first. */
  listRevokedKeys(): Promise<RevokedKey[]>;
}

/** Where a new revocation is announced (the key id), for clients that keep a local set. */
export function revocationChannel(prefix: string): string {
  return `${prefix}:revoked-keys:announce`;
}

/** The hash of revocations: key id → record. */
export function revocationKey(prefix: string): string {
  return `${prefix}:revoked-keys`;
}

// Record and announce together: a subscriber never misses a revocation that is stored.
const RECORD = `
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('PUBLISH', ARGV[3], ARGV[1])
return 1`;

/** The revocation registry: one Redis hash under the queue prefix, key id → record. */
export function createRevocationRegistry(
  redis: RedisConnection,
  prefix: string,
): RevocationRegistry {
  const key = revocationKey(prefix);
  return {
    async record(event, revokedAt) {
      const record: RevokedKey = { id: event.data.id, revoked_at: revokedAt, payload: event.data };
      const added = await redis.eval(
        RECORD,
        1,
        key,
        event.data.id,
        JSON.stringify(record),
        revocationChannel(prefix),
      );
      return added === 1;
    },
    async isKeyRevoked(id) {
      return (await redis.hexists(key, id)) === 1;
    },
    async listRevokedKeys() {
      const records = Object.values(await redis.hgetall(key)).map(
        (v) => JSON.parse(v) as RevokedKey,
      );
      return records.sort((a, b) => b.revoked_at.localeCompare(a.revoked_at));
    },
  };
}
