import { randomBytes } from 'node:crypto';
import type { RedisConnection } from '../../redis/connections.js';

export interface ApiKey {
  readonly id: string;
  readonly token: string;
  readonly created_at: string;
  readonly revoked_at?: string;
}

export interface KeyStore {
  create(): Promise<ApiKey>;
  /** The key a token belongs to, revoked or not; undefined for an unknown token. */
  byToken(token: string): Promise<ApiKey | undefined>;
  byId(id: string): Promise<ApiKey | undefined>;
  /** Marks the key revoked; false when there is no such key or it already was. */
  revoke(id: string): Promise<boolean>;
}

/** API keys in Redis: `<prefix>:keys` (id → record) and `<prefix>:tokens` (token → id). */
export function createKeyStore(redis: RedisConnection, prefix: string): KeyStore {
  const keys = `${prefix}:keys`;
  const tokens = `${prefix}:tokens`;
  const byId = async (id: string) => {
    const raw = await redis.hget(keys, id);
    return raw === null ? undefined : (JSON.parse(raw) as ApiKey);
  };
  return {
    async create() {
      const key: ApiKey = {
        id: `key_${randomBytes(8).toString('hex')}`,
        token: `sk_${randomBytes(24).toString('hex')}`,
        created_at: new Date().toISOString(),
      };
      await redis
        .multi()
        .hset(keys, key.id, JSON.stringify(key))
        .hset(tokens, key.token, key.id)
        .exec();
      return key;
    },
    async byToken(token) {
      const id = await redis.hget(tokens, token);
      return id === null ? undefined : byId(id);
    },
    byId,
    async revoke(id) {
      const key = await byId(id);
      if (key === undefined || key.revoked_at !== undefined) return false;
      await redis.hset(keys, id, JSON.stringify({ ...key, revoked_at: new Date().toISOString() }));
      return true;
    },
  };
}
