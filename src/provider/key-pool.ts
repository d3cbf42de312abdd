import { duplicateConnection, type RedisConnection } from '../redis/connections.js';
import {
  revocationChannel,
  revocationField,
  revocationKey,
} from '../history/revocation-registry.js';
import { NoKeyLeftError } from './provider-errors.js';
import type { ApiKeyConfig } from './provider-settings.js';

/**
 * How stale the local set may get when an announcement is lost (a subscriber reconnecting at the
 * wrong moment): it is reloaded this often, and at every reconnect.
 */
export const REVOCATION_RELOAD_MS = 10_000;

export interface KeyPool {
  /** The first configured key neither revoked nor refused; no Redis round trip. */
  current(): ApiKeyConfig;
  /** The provider answered 401 for this key: move on to the next. */
  refuse(id: string): void;
  /** Ids of the configured keys known revoked. */
  revoked(): readonly string[];
  close(): Promise<void>;
}

/**
 * The configured keys in order, minus those in the revocation registry (which key.revoked
 * deliveries feed). The registry is read once, then kept fresh locally: every new revocation is
 * announced on a channel (revocation-registry.ts) and this pool's subscriber adds it at once, so
 * choosing a key costs nothing per request.
 */
export async function createKeyPool(
  keys: readonly ApiKeyConfig[],
  redis: RedisConnection,
  prefix: string,
): Promise<KeyPool> {
  // The registry's fields (revocationField: a long id is kept as its digest).
  const revoked = new Set<string>();
  const isRevoked = (id: string) => revoked.has(revocationField(id));
  const refused = new Set<string>();
  const reload = async () => {
    for (const id of await redis.hkeys(revocationKey(prefix))) revoked.add(id);
  };
  const subscriber = duplicateConnection(redis);
  subscriber.on('message', (_channel: string, id: string) => {
    revoked.add(id);
  });
  // A reconnected subscriber may have missed announcements: read the registry again.
  subscriber.on('ready', () => {
    void reload().catch(() => undefined);
  });
  subscriber.on('error', () => undefined);
  await subscriber.subscribe(revocationChannel(prefix));
  await reload();
  const timer = setInterval(() => {
    void reload().catch(() => undefined);
  }, REVOCATION_RELOAD_MS);
  timer.unref();

  return {
    current() {
      const usable = keys.find((key) => !isRevoked(key.id) && !refused.has(key.id));
      if (usable !== undefined) return usable;
      throw new NoKeyLeftError(
        keys.filter((key) => isRevoked(key.id)).map((key) => key.id),
        keys.filter((key) => refused.has(key.id) && !isRevoked(key.id)).map((key) => key.id),
      );
    },
    refuse(id) {
      refused.add(id);
    },
    revoked: () => keys.filter((key) => isRevoked(key.id)).map((key) => key.id),
    async close() {
      clearInterval(timer);
      await subscriber.quit().catch(() => {
        subscriber.disconnect();
      });
    },
  };
}
