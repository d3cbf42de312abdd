import type { RedisConnection } from '../redis/connections.js';
import type { KeyRevokedEvent } from '../provider-spec/events.js';
import { decodeEntry, encodeEntry, entryField, type KeptEntry } from './entry-codec.js';

/**
 * A revocation as recorded (entry-codec.ts): the key's id (cut past 64 bytes, `id_truncated`),
 * when the receiver accepted it, and the delivery's `data` as the provider wrote it, or
 * `payload: null` with `payload_bytes` when that was too long to keep. A type, not an
 * interface: the CLI prints entries as they are (rows need an index).
 */
export type RevokedKey = KeptEntry<'revoked_at'>;

export interface RevocationRegistry {
  /**
   * Adds a revocation; false when it was already recorded (a re-run job changes nothing).
   * `dataText`: its `data` as the provider wrote it (HookContext's `delivery.dataText`); without
   * it the entry keeps `event.data` re-serialised.
   */
  record(event: KeyRevokedEvent, revokedAt: string, dataText?: string): Promise<boolean>;
  /** For application code: refuse work for a revoked key. Any id, however long. */
  isKeyRevoked(id: string): Promise<boolean>;
  /** Newest first. */
  listRevokedKeys(): Promise<RevokedKey[]>;
}

/**
 * Where a new revocation is announced (its field in the registry: revocationField), for clients
 * that keep a local set.
 */
export function revocationChannel(prefix: string): string {
  return `${prefix}:revoked-keys:announce`;
}

/** The hash of revocations: revocationField(key id) → entry. */
export function revocationKey(prefix: string): string {
  return `${prefix}:revoked-keys`;
}

/**
 * A key's field in the registry: its id when its JSON text is at most 64 bytes, else a digest
 * of it (entryField). A client that reads the fields compares its ids through this.
 */
export const revocationField = entryField;

// Written and announced together: a subscriber never misses a revocation that is stored.
const RECORD = `
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('PUBLISH', ARGV[3], ARGV[1])
return 1`;

/** The revocation registry: one Redis hash under the queue prefix, revocationField → entry. */
export function createRevocationRegistry(
  redis: RedisConnection,
  prefix: string,
): RevocationRegistry {
  const key = revocationKey(prefix);
  return {
    async record(event, revokedAt, dataText) {
      const { id } = event.data;
      const added = await redis.eval(
        RECORD,
        1,
        key,
        revocationField(id),
        encodeEntry(id, ['revoked_at', revokedAt], dataText ?? JSON.stringify(event.data)),
        revocationChannel(prefix),
      );
      return added === 1;
    },
    async isKeyRevoked(id) {
      const field = revocationField(id);
      if (field === id) return (await redis.hexists(key, id)) === 1;
      // A long id that earlier versions recorded is under the whole id.
      const [digest, whole] = await Promise.all([
        redis.hexists(key, field),
        redis.hexists(key, id),
      ]);
      return digest === 1 || whole === 1;
    },
    async listRevokedKeys() {
      const records = Object.entries(await redis.hgetall(key)).map(([field, value]) =>
        decodeEntry(value, field, 'revoked_at'),
      );
      return records.sort((a, b) => b.revoked_at.localeCompare(a.revoked_at));
    },
  };
}
