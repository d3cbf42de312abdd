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

/**
 * Where cached bodies live: never the queue's Redis, which is `noeviction` (a busy client would
 * fill it, and every delivery would then get 503). It must be one place for every host sharing
 * the Redis: the index there names a body, and a host that cannot read it would call the
 * provider again.
 * The CLI uses the audio store's (provider/store-cache-area.ts).
 */
export interface BlobArea {
  /** Stores `bytes` under `name` (see bodyName), whole or not at all. */
  put(name: string, bytes: Buffer): Promise<void>;
  /** The bytes, or undefined when there are none (expired, swept, never written). */
  get(name: string): Promise<Buffer | undefined>;
  /** Removes what was stored more than `ms` ago; returns how many. */
  removeOlderThan(ms: number): Promise<number>;
}

/**
 * The lease one process holds while it calls the provider for everyone asking the same. Short,
 * and renewed while the call runs: a holder that dies is taken over within LEASE_MS, so a rerun
 * after a killed run waits at most that long.
 */
const LEASE_MS = 2_000;
const RENEW_EVERY_MS = 500;
const POLL_MS = 25;
/** Expired bodies are swept at most this often per process. */
const SWEEP_EVERY_MS = 10 * 60_000;

/** Extends the lease only while it is still ours. */
const RENEW = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`;
/**
 * Writes the index entry only while the lease is still ours: a holder that stalled past its
 * lease (another process took over and called the provider) must not write over the new one's.
 */
const KEEP = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('SET', KEYS[2], ARGV[2], 'EX', ARGV[3]) and 1
end
return 0`;
/** Deletes the lease only while it is still ours: a slow holder must not free another's. */
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`;

/** The lease went to another process (this one stalled past LEASE_MS): it stops and waits. */
class LeaseLostError extends Error {
  override name = 'LeaseLostError';
}

/** What went wrong in the cache; the caller is answered all the same (with a call, if need be). */
export type CacheTrouble = 'read' | 'write' | 'sweep';

/**
 * A body's name: the request's hash, when it was written (ms since the epoch, hex: an area may
 * file bodies by time and sweep them without reading each one's age) and a random part.
 */
export function bodyName(hash: string, now = Date.now()): string {
  return `${hash}-${now.toString(16)}-${randomBytes(4).toString('hex')}`;
}

/** When the body named `name` was written, ms since the epoch. */
export function writtenAt(name: string): number {
  const match = /^[0-9a-f]{1,64}-([0-9a-f]{1,12})-[0-9a-f]{8}$/.exec(name);
  if (match?.[1] === undefined) throw new Error(`not a TTS body name: ${JSON.stringify(name)}`);
  return parseInt(match[1], 16);
}

interface IndexEntry {
  readonly name: string;
  readonly contentType: string;
}

/**
 * The TTS cache the spec advises: keyed by a hash of the canonical request (base URL, text,
 * voice, every option). Redis holds only a small index entry per request (the body's name and
 * type), expiring after TTS_CACHE_TTL_SECONDS; the bodies are in `area`, swept once expired.
 * Identical requests at once make one call: in a process they share the promise; across
 * processes the first takes a lease (SET NX) and the others wait for its result, or take over
 * if it dies.
 */
export function createTtsCache(
  redis: RedisConnection,
  prefix: string,
  ttlSeconds: number,
  area: BlobArea,
  /**
   * Told of each failure of `area`. None of them fails a request: the provider's answer, paid
   * for, is returned even when it cannot be kept (a full or unwritable cache once turned three
   * answered calls into three ENOTDIR errors), and a body that cannot be read is a miss.
   */
  trouble: (what: CacheTrouble, error: unknown) => void,
) {
  const inFlight = new Map<string, Promise<CachedAudio>>();
  let lastSweep = 0;
  const keys = (hash: string) => ({
    // Not the `tts:` key of old, which held whole bodies: an upgrade must not parse those.
    index: `${prefix}:provider:tts-index:${hash}`,
    lease: `${prefix}:provider:tts:${hash}:lease`,
  });

  async function read(key: string): Promise<CachedAudio | undefined> {
    const entry = await redis.get(key);
    if (entry === null) return undefined;
    const { name, contentType } = JSON.parse(entry) as IndexEntry;
    const audio = await area.get(name).catch((error: unknown) => {
      trouble('read', error);
      return undefined;
    });
    return audio === undefined ? undefined : { audio, contentType };
  }

  async function keep(
    key: string,
    hash: string,
    fresh: CachedAudio,
    lease: { key: string; token: string },
  ) {
    // A fresh name per body: a reader never sees a body replaced under the name it was given.
    // (A body whose entry is then refused is swept with the expired ones.)
    const name = bodyName(hash);
    try {
      await area.put(name, fresh.audio);
    } catch (error: unknown) {
      // No entry without its body; the lease goes back and the next asker calls again.
      trouble('write', error);
      return;
    }
    const entry: IndexEntry = { name, contentType: fresh.contentType };
    const kept = await redis.eval(
      KEEP,
      2,
      lease.key,
      key,
      lease.token,
      JSON.stringify(entry),
      ttlSeconds,
    );
    if (kept !== 1) throw new LeaseLostError('the TTS lease went to another process');
  }

  /** Expired bodies go, off the caller's path: a sweep must not hold the lease or the answer. */
  function sweepNowAndThen() {
    if (Date.now() - lastSweep < SWEEP_EVERY_MS) return;
    lastSweep = Date.now();
    area.removeOlderThan(ttlSeconds * 1000).catch((error: unknown) => {
      trouble('sweep', error);
    });
  }

  /**
   * Holds the lease while `work` runs, renewing it; gives it back only if still ours. A renewal
   * that finds the lease another's, or renewals failing for LEASE_MS (it has expired by then),
   * abort `work`'s signal and make this a LeaseLostError: the holder stops, writes nothing, and
   * waits for the new holder's answer like any other process.
   */
  async function underLease<T>(
    lease: string,
    token: string,
    work: (signal: AbortSignal) => Promise<T>,
  ): Promise<T> {
    const lost = new AbortController();
    let renewedAt = Date.now();
    const renew = setInterval(() => {
      redis.eval(RENEW, 1, lease, token, LEASE_MS).then(
        (kept) => {
          if (kept === 1) renewedAt = Date.now();
          else lost.abort(new LeaseLostError('the TTS lease went to another process'));
        },
        () => {
          if (Date.now() - renewedAt >= LEASE_MS)
            lost.abort(new LeaseLostError('the TTS lease could not be renewed in time'));
        },
      );
    }, RENEW_EVERY_MS);
    try {
      return await work(lost.signal);
    } catch (error: unknown) {
      if (lost.signal.aborted) throw new LeaseLostError('the TTS lease was lost', { cause: error });
      throw error;
    } finally {
      clearInterval(renew);
      await redis.eval(RELEASE, 1, lease, token).catch(() => undefined);
    }
  }

  async function shared(
    hash: string,
    call: (signal: AbortSignal) => Promise<CachedAudio>,
  ): Promise<CachedAudio> {
    const { index, lease } = keys(hash);
    const token = randomBytes(8).toString('hex');
    for (;;) {
      const hit = await read(index);
      if (hit) return hit;
      if ((await redis.set(lease, token, 'PX', LEASE_MS, 'NX')) === 'OK') {
        try {
          return await underLease(lease, token, async (signal) => {
            // The previous holder stores its result before it lets the lease go: look again, or
            // a process that missed just before that store would call a second time.
            const late = await read(index);
            if (late) return late;
            const fresh = await call(signal);
            signal.throwIfAborted();
            await keep(index, hash, fresh, { key: lease, token });
            sweepNowAndThen();
            return fresh;
          });
        } catch (error: unknown) {
          if (!(error instanceof LeaseLostError)) throw error;
          continue;
        }
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  return {
    hash: (request: unknown) => createHash('sha256').update(canonicalJson(request)).digest('hex'),
    /** The cached answer, or the one call's for everyone asking the same at once. */
    get(hash: string, call: (signal: AbortSignal) => Promise<CachedAudio>): Promise<CachedAudio> {
      const pending = inFlight.get(hash);
      if (pending) return pending;
      const started = shared(hash, call).finally(() => inFlight.delete(hash));
      inFlight.set(hash, started);
      return started;
    },
  };
}
