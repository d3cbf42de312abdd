import { createHash, randomBytes } from 'node:crypto';
import type { RedisConnection } from '../redis/connections.js';

/** A stable JSON form: object keys sorted at every level, so `{a, b}` and `{b, a}` hash alike. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

export interface CachedAudio {
  readonly audio: Buffer;
  readonly contentType: string;
}

/** How long one process may hold the right to call for everyone, and how often others look. */
const LEASE_MS = 60_000;
const POLL_MS = 25;

/**
 * The TTS cache the spec advises: keyed by a hash of the canonical request (base URL, text,
 * voice, every option), kept TTS_CACHE_TTL_SECONDS in Redis. Identical requests at once make one
 * call: in a process they share the promise; across processes the first takes a lease (SET NX)
 * and the others wait for its result, or take over if it dies.
 */
export function createTtsCache(redis: RedisConnection, prefix: string, ttlSeconds: number) {
  const inFlight = new Map<string, Promise<CachedAudio>>();
  const keys = (hash: string) => ({
    value: `${prefix}:provider:tts:${hash}`,
    lease: `${prefix}:provider:tts:${hash}:lease`,
  });
  const read = async (key: string): Promise<CachedAudio | undefined> => {
    const stored = await redis.getBuffer(key);
    if (stored === null) return undefined;
    const split = stored.indexOf(0);
    return { contentType: stored.subarray(0, split).toString(), audio: stored.subarray(split + 1) };
  };

  async function shared(hash: string, call: () => Promise<CachedAudio>): Promise<CachedAudio> {
    const { value, lease } = keys(hash);
    const token = randomBytes(8).toString('hex');
    for (;;) {
      const hit = await read(value);
      if (hit) return hit;
      if ((await redis.set(lease, token, 'PX', LEASE_MS, 'NX')) === 'OK') {
        try {
          // The previous holder stores its result before it lets the lease go: look again, or a
          // process that missed just before that store would call a second time (seen in CI).
          const late = await read(value);
          if (late) return late;
          const fresh = await call();
          const stored = Buffer.concat([
            Buffer.from(fresh.contentType),
            Buffer.from([0]),
            fresh.audio,
          ]);
          await redis.set(value, stored, 'EX', ttlSeconds);
          return fresh;
        } finally {
          await redis.del(lease);
        }
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  return {
    enabled: ttlSeconds > 0,
    hash: (request: unknown) => createHash('sha256').update(canonicalJson(request)).digest('hex'),
    /** The cached answer, or the one call's for everyone asking the same at once. */
    get(hash: string, call: () => Promise<CachedAudio>): Promise<CachedAudio> {
      const pending = inFlight.get(hash);
      if (pending) return pending;
      const started = shared(hash, call).finally(() => inFlight.delete(hash));
      inFlight.set(hash, started);
      return started;
    },
  };
}
