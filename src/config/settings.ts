import { z } from 'zod';
import { cpusInQuota } from './cpu-quota.js';
import {
  autoOrInt,
  bool,
  forwardUrls,
  hostPorts,
  int,
  optionalPath,
  origins,
  secrets,
  trustProxy,
} from './parsers.js';

/**
 * The sender retries for 30 s + 5 min + 30 min + 2 h + 6 h = 8 h 35 min 30 s after the first
 * attempt (docs/provider.md, "Retries"). A dedupe window shorter than that would let a late retry run twice.
 */
export const SENDER_RETRY_WINDOW_SECONDS = 30 + 5 * 60 + 30 * 60 + 2 * 3600 + 6 * 3600;

/** Which process reads a setting: the HTTP receiver, the workers, or the operator CLI. */
export type Reader = 'web' | 'worker' | 'cli' | 'sandbox' | 'client';

export interface SettingSpec {
  /** Parses the raw value (the default when unset; undefined when there is neither). */
  readonly schema: z.ZodType;
  /** The raw default, as it would be written in the environment; absent: none. */
  readonly default?: string;
  /** Start-up is refused without it (the CLI is let off: `send` takes --secret). */
  readonly required?: true;
  /** The Config field, when the camel-cased name would read badly. */
  readonly key?: string;
  readonly readBy: readonly Reader[];
  /** One line for docs/configuration.md's table and .env.example. */
  readonly doc: string;
}

/**
 * EVERY SETTING, DECLARED ONCE. The Config type follows from this table; a test checks that
 * .env.example and docs/configuration.md's table name the same variables with the same
 * defaults and readers. Add a setting here and those two tell you where else to write it.
 */
export const SETTINGS = {
  WEBHOOK_SECRETS: {
    schema: secrets,
    required: true,
    readBy: ['web', 'cli', 'sandbox'],
    doc: 'comma-separated signing secrets; any one verifies a delivery (rotation)',
  },
  PORT: { schema: int(0, 65535), default: '3000', readBy: ['web', 'cli'], doc: 'HTTP port' },
  INTERNAL_PORT: {
    schema: int(1, 65535).optional(),
    readBy: ['web'],
    doc: 'when set, /metrics and /admin/queues are served only on this port (same HOST) and 404 on PORT; /healthz and /readyz on both',
  },
  HOST: {
    schema: z.string(),
    default: '0.0.0.0',
    readBy: ['web', 'worker'],
    doc: "HTTP listen address (also the worker's WORKER_HEALTH_PORT)",
  },
  WEBHOOK_PATH: {
    schema: z.string().regex(/^\/[\w\-./]*$/, 'must be a path such as /webhooks'),
    default: '/webhooks',
    readBy: ['web', 'cli'],
    doc: 'path of the receiving endpoint',
  },
  SIGNATURE_TOLERANCE_SECONDS: {
    schema: int(1, 86_400),
    default: '300',
    readBy: ['web'],
    doc: 'max |now − t|, in both directions',
  },
  MAX_BODY_BYTES: {
    schema: int(1, 100 * 1024 * 1024),
    default: '1048576',
    readBy: ['web'],
    doc: 'larger bodies get 413',
  },
  REDIS_URL: {
    schema: z.string().regex(/^rediss?:\/\//, 'must start with redis:// or rediss://'),
    default: 'redis://127.0.0.1:6379',
    readBy: ['web', 'worker', 'cli', 'sandbox'],
    doc: 'Redis for dedupe, queues and records (`rediss://` for TLS; password in the URL)',
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
    doc: 'key prefix of the queue and records; a hash tag such as `{aw}` for Redis Cluster',
  },
  DEDUPE_TTL_SECONDS: {
    schema: int(
      SENDER_RETRY_WINDOW_SECONDS + 1,
      Number.MAX_SAFE_INTEGER,
      `must exceed the sender's retry window of ${SENDER_RETRY_WINDOW_SECONDS} s (8 h 35 min 30 s)`,
    ),
    default: '259200',
    readBy: ['web'],
    doc: 'how long an `event` + `data.id` pair is remembered (3 days); must exceed the retry window (30,930 s)',
  },
  ROLE: {
    schema: z.enum(['web', 'worker', 'all'], 'must be web, worker or all'),
    default: 'all',
    readBy: ['web', 'worker'],
    doc: '`web` (HTTP only), `worker` (workers only) or `all`',
  },
  AUDIO_DIR: {
    schema: z.string(),
    default: './data/audio',
    readBy: ['worker', 'cli'],
    doc: 'where downloaded audio lands; must be writable (checked at start); the CLI keeps its TTS cache bodies in the store, under `.archive/tts-cache/`',
  },
  AUDIO_STORE: {
    schema: z.enum(['local', 's3'], 'must be local or s3'),
    default: 'local',
    readBy: ['worker', 'cli'],
    doc: '`local`: files under AUDIO_DIR; `s3`: objects in an S3-compatible bucket (S3_*), credentials from the AWS SDK default chain',
  },
  S3_BUCKET: {
    schema: z.string().optional(),
    readBy: ['worker', 'cli'],
    doc: 'the bucket, required with AUDIO_STORE=s3 (checked at start with HeadBucket)',
  },
  S3_PREFIX: {
    schema: z
      .string()
      .regex(/^[^\\]*$/, 'must not hold a backslash')
      // `audio` would also take in another app's `audio-backup/…` when listing or cleaning up.
      .regex(/(^|\/)$/, 'must end with / (e.g. audio/), so its keys are apart from other keys')
      .optional()
      .transform((prefix) => prefix ?? ''),
    readBy: ['worker', 'cli'],
    doc: 'prepended to every object key, e.g. `audio/`; must end with `/`; unset: none',
  },
  S3_ENDPOINT: {
    schema: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).optional(),
    readBy: ['worker', 'cli'],
    doc: 'the endpoint of an S3-compatible store (Ceph RGW, MinIO, R2…); unset: AWS',
  },
  S3_REGION: {
    schema: z.string().min(1),
    default: 'us-east-1',
    readBy: ['worker', 'cli'],
    doc: "the bucket's region",
  },
  S3_FORCE_PATH_STYLE: {
    schema: bool,
    default: 'false',
    readBy: ['worker', 'cli'],
    doc: '`true`: path-style addressing (most self-hosted stores)',
  },
  ARCHIVE_RETENTION_HOURS: {
    schema: int(0, 24 * 365 * 10),
    default: '168',
    readBy: ['worker', 'cli'],
    doc: 'every accepted delivery is archived in the audio store (`.archive/`) for this long, for `replay`; `0`: no archive',
  },
  CDN_URL: {
    schema: origins,
    key: 'cdnOrigins',
    readBy: ['worker', 'cli'],
    doc: 'comma-separated origins (`https://host[:port]`) `audio_url` may point to; nothing else is fetched',
  },
  DOWNLOAD_ALLOW_PRIVATE_IPS: {
    schema: bool,
    default: 'false',
    readBy: ['worker'],
    doc: '`true` lets downloads reach loopback/private addresses (local development and tests only)',
  },
  DOWNLOAD_CA_FILE: {
    schema: optionalPath,
    readBy: ['worker'],
    doc: 'a PEM file of extra CA certificates downloads trust (a staging CDN, the sandbox)',
  },
  DOWNLOAD_MAX_BYTES: {
    schema: int(1),
    default: '104857600',
    readBy: ['worker'],
    doc: 'larger audio is refused (after decoding, when the CDN compressed it)',
  },
  DOWNLOAD_TIMEOUT_MS: {
    schema: int(1),
    default: '60000',
    readBy: ['worker'],
    doc: 'whole-download deadline',
  },
  DOWNLOAD_ATTEMPTS: {
    schema: int(1, 100),
    default: '8',
    readBy: ['worker'],
    doc: 'attempts per job, the first included',
  },
  DOWNLOAD_BACKOFF_MS: {
    schema: int(1),
    default: '2000',
    readBy: ['worker'],
    doc: 'first retry delay; doubles per attempt, with jitter',
  },
  WEB_CONCURRENCY: {
    schema: autoOrInt(cpusInQuota, 1, 256),
    default: 'auto',
    readBy: ['web'],
    doc: "receiver processes sharing the port with ROLE=web (node:cluster); auto: the CPUs in the container's quota",
  },
  WORKER_CONCURRENCY: {
    schema: int(1, 1000),
    default: '8',
    readBy: ['worker'],
    doc: 'jobs processed at once per worker process',
  },
  WORKER_LOCK_MS: {
    schema: int(1000),
    default: '30000',
    readBy: ['worker'],
    doc: "job lock; a crashed worker's job is taken over after about this long",
  },
  SHUTDOWN_TIMEOUT_MS: {
    schema: int(0),
    default: '25000',
    readBy: ['web', 'worker'],
    doc: 'graceful shutdown deadline after SIGTERM/SIGINT',
  },
  LOG_LEVEL: {
    schema: z.enum(
      ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
      'must be one of fatal, error, warn, info, debug, trace, silent',
    ),
    default: 'info',
    readBy: ['web', 'worker'],
    doc: 'pino level',
  },
  LOG_FORMAT: {
    schema: z.enum(['auto', 'json', 'pretty'], 'must be auto, json or pretty'),
    default: 'auto',
    readBy: ['web', 'worker'],
    doc: '`json` (one object a line, for log collectors), `pretty` (readable lines, pino-pretty) or `auto`: pretty when standard output is a terminal, else JSON',
  },
  TRUST_PROXY: {
    schema: trustProxy,
    default: 'loopback',
    readBy: ['web'],
    doc: 'Express `trust proxy` setting for the load balancer in front',
  },
  ADMIN_PASSWORD: {
    schema: z.string().optional(),
    readBy: ['web'],
    doc: 'serves the queue dashboard at /admin/queues (Basic auth, user `admin`); unset: no dashboard',
  },
  ADMIN_READ_ONLY: {
    schema: bool,
    default: 'true',
    readBy: ['web'],
    doc: 'the dashboard shows but changes nothing; `false` enables retry, remove, clean',
  },
  WORKER_HEALTH_PORT: {
    schema: int(1, 65535).optional(),
    readBy: ['worker'],
    doc: '/healthz (liveness: notices a wedged worker) and /metrics of a process running workers; unset: none',
  },
  WORKER_STALL_MS: {
    schema: int(1000),
    default: '300000',
    readBy: ['worker'],
    doc: 'a worker that holds jobs but settles none this long (or idles while jobs wait) is wedged',
  },
  FORWARD_URLS: {
    schema: forwardUrls,
    key: 'forwardDestinations',
    readBy: ['worker'],
    doc: 'comma-separated destinations every handled delivery is forwarded to, any mix: `http(s)://host/path` (POST, signed with FORWARD_SECRET), `nats://host:port/<subject>` (JetStream), `amqp://user:pass@host:port[/vhost]?exchange=E&routing_key=R`; unset: none (docs/forwarding.md)',
  },
  FORWARD_SECRET: {
    schema: z
      .string()
      .regex(
        /^whsec_(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$/,
        'must be whsec_ followed by a base64 key (openssl rand -base64 32)',
      )
      .optional(),
    readBy: ['worker'],
    doc: '`whsec_<base64 key>`: signs HTTP forwards as Standard Webhooks; required with an HTTP destination',
  },
  FORWARD_ATTEMPTS: {
    schema: int(1, 100),
    default: '10',
    readBy: ['worker'],
    doc: 'attempts per message and destination, the first included, before it is listed by `failures`',
  },
  FORWARD_BACKOFF_MS: {
    schema: int(1),
    default: '5000',
    readBy: ['worker'],
    doc: "first retry delay of a forward; doubles per attempt, with jitter, up to 10 minutes (the default's 10 attempts span 15 to 30 minutes)",
  },
  FORWARD_TIMEOUT_MS: {
    schema: int(100, 600_000),
    default: '10000',
    readBy: ['worker'],
    doc: "one forward attempt's deadline (connect, send, the broker's confirmation or the endpoint's answer)",
  },
  FORWARD_CONCURRENCY: {
    schema: int(1, 1000),
    default: '32',
    readBy: ['worker'],
    doc: 'forwards sent at once per worker process',
  },
  OTEL_EXPORTER_OTLP_ENDPOINT: {
    schema: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
    key: 'otelEndpoint',
    readBy: ['web', 'worker'],
    doc: 'OTLP/HTTP collector base URL (traces go to /v1/traces); unset: tracing off',
  },
} as const satisfies Record<string, SettingSpec>;

export type SettingName = keyof typeof SETTINGS;
