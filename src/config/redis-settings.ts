import { z } from 'zod';
import { hostPorts, int, redisUrl } from './parsers.js';
import type { ParsedSettings, SettingSpec } from './setting-spec.js';

/**
 * The sender retries for 30 s + 5 min + 30 min + 2 h + 6 h = 8 h 35 min 30 s after the first
 * attempt (docs/provider.md, "Retries"). The last retry's signature is accepted for
 * SIGNATURE_TOLERANCE_SECONDS after its `t`, so the dedupe window must outlast both together
 * (config.ts checks it): a shorter one lets a late retry run twice.
 */
export const SENDER_RETRY_WINDOW_SECONDS = 30 + 5 * 60 + 30 * 60 + 2 * 3600 + 6 * 3600;

/**
 * The queue's Redis: how it is reached (one server, Sentinels or a Cluster), how many replicas
 * hold a delivery before its 2xx, and the keys kept there.
 */
export const REDIS_SETTINGS = {
  REDIS_URL: {
    schema: redisUrl,
    default: 'redis://127.0.0.1:6379',
    readBy: ['web', 'worker', 'cli', 'sandbox'],
    doc: 'Redis for dedupe, queues and history (`rediss://` for TLS; password in the URL, `%`-escaped); a malformed one (bad port, bad `%` escape, another scheme) stops start-up with one line that never shows the password',
  },
  REDIS_PASSWORD: {
    // Apart from the URL so that each can live where it belongs: the URL (host, port, TLS) in a
    // ConfigMap, the password in a Secret. Taken as written: no %-escapes to get wrong.
    schema: z.string().optional(),
    readBy: ['web', 'worker', 'cli', 'sandbox'],
    doc: "Redis's password, as written (no `%`-escapes), for every topology; for a REDIS_URL that holds none: set one or the other",
  },
  REDIS_SENTINELS: {
    schema: hostPorts,
    readBy: ['web', 'worker', 'cli', 'sandbox', 'client'],
    doc: 'comma-separated `host:port` of Sentinels: the primary named REDIS_SENTINEL_NAME is used and followed across failovers (password from REDIS_URL)',
  },
  REDIS_SENTINEL_NAME: {
    schema: z.string(),
    default: 'mymaster',
    readBy: ['web', 'worker', 'cli', 'sandbox', 'client'],
    doc: "the Sentinels' name of the primary",
  },
  REDIS_CLUSTER_NODES: {
    schema: hostPorts,
    readBy: ['web', 'worker', 'cli', 'sandbox', 'client'],
    doc: 'comma-separated `host:port` seed nodes of a Redis Cluster; QUEUE_PREFIX must then hold a `{hash tag}`',
  },
  REDIS_WAIT_REPLICAS: {
    schema: int(0, 100),
    default: '0',
    readBy: ['web'],
    doc: 'when > 0, a 2xx only after this many replicas acknowledged the delivery (Redis WAIT); fewer in time → 503',
  },
  REDIS_WAIT_TIMEOUT_MS: {
    schema: int(1, 60_000),
    default: '500',
    readBy: ['web'],
    doc: 'how long to wait for those acknowledgements',
  },
  QUEUE_PREFIX: {
    schema: z.string().regex(/^[^\s:]+$/, 'must be non-empty, without spaces or colons'),
    default: 'audio-webhooks',
    readBy: ['web', 'worker', 'cli'],
    doc: 'key prefix of the queue and its history; a hash tag such as `{aw}` for Redis Cluster',
  },
  QUEUE_SHARDS: {
    schema: int(1, 1024),
    default: '1',
    readBy: ['web', 'worker', 'cli'],
    doc: 'how many queues the deliveries are spread over, each in a hash slot of its own (shard n of N in the n-th of N equal slot ranges), for a Redis Cluster; a delivery\'s shard follows from its event and `data.id`; recorded in Redis at first start, and a process started with another count is refused (docs/operations.md, "Changing QUEUE_SHARDS")',
  },
  DEDUPE_TTL_SECONDS: {
    // Its lower bound depends on SIGNATURE_TOLERANCE_SECONDS too: config.ts checks the pair.
    schema: int(1),
    default: '259200',
    // The workers too: a delivery's timeline lives as long when the archive is off.
    readBy: ['web', 'worker'],
    doc: "how long an `event` + `data.id` pair is remembered (3 days); must exceed the sender's retry window (30,930 s) plus SIGNATURE_TOLERANCE_SECONDS",
  },
  REDIS_MEMORY_RESERVE_PERCENT: {
    schema: int(2, 50),
    default: '10',
    readBy: ['web', 'worker'],
    doc: "part of Redis's maxmemory kept for the workers to drain: from 100 − this % on deliveries get 503, from 100 − half of it workers take no new delivery and finish forwards (docs/capacity.md)",
  },
} as const satisfies Record<string, SettingSpec>;

/** The queue's Redis settings, as parsed: what connections, the dedupe window and the write gate read. */
export type RedisSettings = ParsedSettings<typeof REDIS_SETTINGS>;
