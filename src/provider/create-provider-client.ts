import { pino, type Logger } from 'pino';
import { request, type Dispatcher } from 'undici';
import { createLogger } from '../telemetry/logger.js';
import type { RedisConnection } from '../redis/connections.js';
import { createKeyPool } from './key-pool.js';
import { createLimiter } from './limiter.js';
import {
  ProviderError,
  ProviderUnavailableError,
  RateLimitDeadlineError,
} from './provider-errors.js';
import { SPEC_LIMITS, type Endpoint } from '../provider-spec/rate-limits.js';
import type { ApiKeyConfig } from './provider-settings.js';
import { askedWaitMs, fullJitter } from './retry-wait.js';
import { createTtsCache, type BlobArea, type CacheTrouble, type CachedAudio } from './tts-cache.js';

export interface ProviderClientOptions {
  /** The provider's {base_url} (PROVIDER_BASE_URL). */
  readonly baseUrl: string;
  /** Used in order; a revoked or refused key is skipped (PROVIDER_API_KEYS). */
  readonly keys: readonly ApiKeyConfig[];
  /** Shared by every process that must share the limits, pauses and cache. */
  readonly redis: RedisConnection;
  /**
   * Where the revocation registry lives (the service's QUEUE_PREFIX).
   * @defaultValue 'audio-webhooks'
   */
  readonly prefix?: string;
  /**
   * Per key and window; endpoints left out keep the spec's limit.
   * @defaultValue the spec's: tts 60, voice-convert 20, voices 600 (provider-spec/rate-limits.ts)
   */
  readonly limits?: Partial<Record<Endpoint, number>>;
  /**
   * The window the limits count in, ms.
   * @defaultValue 60000
   */
  readonly windowMs?: number;
  /**
   * Identical TTS requests are served from the cache this long; 0 turns it off.
   * @defaultValue 86400
   */
  readonly cacheTtlSeconds?: number;
  /**
   * Where cached TTS bodies are kept (Redis keeps only an index). Without one, nothing is cached:
   * the bodies never go into the queue's Redis.
   * @defaultValue none (no cache)
   */
  readonly cacheArea?: BlobArea;
  /**
   * Where the client's warnings go (a cache that cannot keep or read a body).
   * @defaultValue JSON lines at level warn on standard error
   */
  readonly logger?: Pick<Logger, 'warn'>;
  /**
   * How long a call may wait for a slot or a pause, ms.
   * @defaultValue 300000 (5 minutes)
   */
  readonly deadlineMs?: number;
  /**
   * Retries of 429, 408, 5xx and network errors.
   * @defaultValue 4
   */
  readonly maxRetries?: number;
  /**
   * One request's timeout, ms.
   * @defaultValue 30000
   */
  readonly timeoutMs?: number;
  /**
   * The undici dispatcher requests go through.
   * @defaultValue undici's global dispatcher
   */
  readonly dispatcher?: Dispatcher;
}

export interface AudioResult {
  readonly audio: Buffer;
  readonly contentType: string;
  /** True when the TTS cache answered. */
  readonly cached: boolean;
}

export interface ProviderClient {
  tts(body: { text: string; voice: string } & Record<string, unknown>): Promise<AudioResult>;
  voiceConvert(
    body: { audio_url: string; voice: string } & Record<string, unknown>,
  ): Promise<AudioResult>;
  /** The parsed JSON of GET /voices, as the provider sent it. */
  voices(): Promise<unknown>;
  /** Ids of the configured keys known revoked. */
  revokedKeys(): readonly string[];
  /** Failures of the TTS cache's area since the client was made, by kind; none failed a call. */
  cacheFailures(): Readonly<Record<CacheTrouble, number>>;
  close(): Promise<void>;
}

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: Buffer;
}

const RETRIED = (status: number) => status === 429 || status === 408 || status >= 500;

/**
 * The provider's API as the spec asks it to be used: every process sharing the Redis shares the
 * limits (they never send more than the limit in any window), a 429 pauses that key and endpoint
 * for every process until its Retry-After has passed, failures back off with full jitter and
 * never retry sooner than asked, a revoked key is never used again, identical TTS is cached.
 */
export async function createProviderClient(
  options: ProviderClientOptions,
): Promise<ProviderClient> {
  if (options.keys.length === 0)
    throw new Error('no API keys: set PROVIDER_API_KEYS (key_id=token,…)');
  const prefix = options.prefix ?? 'audio-webhooks';
  const windowMs = options.windowMs ?? 60_000;
  const limits = { ...SPEC_LIMITS, ...options.limits };
  const deadlineMs = options.deadlineMs ?? 300_000;
  const maxRetries = options.maxRetries ?? 4;
  const limiter = createLimiter(options.redis, prefix, limits, windowMs);
  const pool = await createKeyPool(options.keys, options.redis, prefix);
  const cacheTtlSeconds = options.cacheTtlSeconds ?? 86_400;
  const logger = options.logger ?? createLogger('warn', pino.destination(2));
  const cacheFailures: Record<CacheTrouble, number> = { read: 0, write: 0, sweep: 0 };
  const cache =
    options.cacheArea === undefined || cacheTtlSeconds === 0
      ? undefined
      : createTtsCache(options.redis, prefix, cacheTtlSeconds, options.cacheArea, (what, error) => {
          cacheFailures[what]++;
          // The error's own words (a path, a store's status), never the request or a key.
          logger.warn(
            { what, error: error instanceof Error ? error.message : String(error) },
            `the TTS cache could not ${what === 'sweep' ? 'sweep expired bodies' : `${what} a body`}`,
          );
        });
  const base = options.baseUrl.replace(/\/+$/, '');

  /** Waits for this key's slot (a pause by any process included), within the deadline. */
  async function slot(keyId: string, endpoint: Endpoint, deadline: number): Promise<string> {
    for (;;) {
      const admitted = await limiter.tryAdmit(keyId, endpoint);
      if (typeof admitted !== 'number') return admitted.entry;
      if (Date.now() + admitted > deadline) throw new RateLimitDeadlineError(endpoint, admitted);
      await new Promise((resolve) => setTimeout(resolve, admitted));
    }
  }

  async function send(
    endpoint: Endpoint,
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
    /** The caller's: an abort (the TTS lease lost) ends the call, never retried. */
    stop?: AbortSignal,
  ) {
    const deadline = Date.now() + deadlineMs;
    let lastProblem = '';
    for (let attempt = 0; attempt <= maxRetries; attempt++) {
      stop?.throwIfAborted();
      const key = pool.current();
      const entry = await slot(key.id, endpoint, deadline);
      let answer: Answer;
      try {
        const res = await request(`${base}${path}`, {
          method,
          headers: {
            authorization: `Bearer ${key.token}`,
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          signal: AbortSignal.any([
            AbortSignal.timeout(options.timeoutMs ?? 30_000),
            ...(stop === undefined ? [] : [stop]),
          ]),
          ...(options.dispatcher === undefined ? {} : { dispatcher: options.dispatcher }),
        });
        answer = {
          status: res.statusCode,
          headers: res.headers,
          body: Buffer.from(await res.body.arrayBuffer()),
        };
      } catch (error: unknown) {
        await limiter.settle(key.id, endpoint, entry);
        stop?.throwIfAborted();
        lastProblem = error instanceof Error ? error.message : String(error);
        await new Promise((resolve) => setTimeout(resolve, fullJitter(attempt)));
        continue;
      }
      await limiter.settle(key.id, endpoint, entry);
      if (answer.status >= 200 && answer.status < 300) return answer;
      const detail = detailOf(answer.body);
      if (answer.status === 401) {
        // A key the provider refuses: the next one takes over, at once.
        pool.refuse(key.id);
        attempt--;
        continue;
      }
      if (!RETRIED(answer.status)) throw new ProviderError(answer.status, detail, key.id);
      lastProblem = `${answer.status}: ${detail}`;
      const asked = askedWaitMs(answer.headers, windowMs);
      if (answer.status === 429) {
        // Every process holds off this key and endpoint until the provider's wait has passed.
        await limiter.pause(key.id, endpoint, asked ?? fullJitter(attempt, 1000, windowMs));
      } else {
        await new Promise((resolve) =>
          setTimeout(resolve, Math.max(asked ?? 0, fullJitter(attempt))),
        );
      }
    }
    throw new ProviderUnavailableError(
      `${endpoint} failed after ${maxRetries + 1} attempts: ${lastProblem}`,
    );
  }

  const audioOf = (answer: Answer): CachedAudio => ({
    audio: answer.body,
    contentType: String(answer.headers['content-type'] ?? 'application/octet-stream'),
  });

  return {
    async tts(body) {
      const call = async (stop?: AbortSignal) =>
        audioOf(await send('tts', 'POST', '/v1/tts', body, stop));
      if (cache === undefined) return { ...(await call()), cached: false };
      let called = false;
      const result = await cache.get(cache.hash({ base, endpoint: 'tts', body }), (stop) => {
        called = true;
        return call(stop);
      });
      return { ...result, cached: !called };
    },
    async voiceConvert(body) {
      return {
        ...audioOf(await send('voice-convert', 'POST', '/v1/voice-convert', body)),
        cached: false,
      };
    },
    async voices() {
      return JSON.parse((await send('voices', 'GET', '/voices')).body.toString()) as unknown;
    },
    revokedKeys: () => pool.revoked(),
    cacheFailures: () => ({ ...cacheFailures }),
    close: () => pool.close(),
  };
}

function detailOf(body: Buffer): string {
  try {
    const parsed = JSON.parse(body.toString()) as { detail?: unknown };
    return typeof parsed.detail === 'string' ? parsed.detail : body.toString().slice(0, 200);
  } catch {
    return body.toString().slice(0, 200);
  }
}
