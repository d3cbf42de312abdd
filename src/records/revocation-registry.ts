import type { Redis } from 'ioredis';
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

/** The revocation registry: one Redis hash under the queue prefix, key id → record. */
export function createRevocationRegistry(redis: Redis, prefix: string): RevocationRegistry {
  const key = `${prefix}:revoked-keys`;
  return {
    async record(event, revokedAt) {
      const record: RevokedKey = { id: event.data.id, revoked_at: revokedAt, payload: event.data };
      return (await redis.hsetnx(key, event.data.id, JSON.stringify(record))) === 1;
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
