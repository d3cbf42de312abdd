import express from 'express';
import { z } from 'zod';

/**
 * The sender retries for 30 s + 5 min + 30 min + 2 h + 6 h = 8 h 35 min 30 s after the first
 * attempt (spec §6). A dedupe window shorter than that would let a late retry run twice.
 */
export const SENDER_RETRY_WINDOW_SECONDS = 30 + 5 * 60 + 30 * 60 + 2 * 3600 + 6 * 3600;

export type Role = 'web' | 'worker' | 'all';

/** Every setting of the service. Defaults are those of CONTRACT.md. */
export interface Config {
  /** Signing secrets; any one verifies a delivery, so a secret can be rotated without downtime. */
  readonly webhookSecrets: readonly string[];
  readonly port: number;
  readonly host: string;
  readonly webhookPath: string;
  /** Largest accepted |now − t|, both directions. */
  readonly signatureToleranceSeconds: number;
  readonly maxBodyBytes: number;
  readonly redisUrl: string;
  readonly queuePrefix: string;
  readonly dedupeTtlSeconds: number;
  readonly role: Role;
  readonly audioDir: string;
  /** Normalised origins (`https://host[:port]`) that `audio_url` may point to. */
  readonly cdnOrigins: readonly string[];
  readonly downloadAllowPrivateIps: boolean;
  readonly downloadMaxBytes: number;
  readonly downloadTimeoutMs: number;
  /** Attempts of a download job, the first included (not in CONTRACT: the spec leaves it open). */
  readonly downloadAttempts: number;
  /** First retry delay of a download job; doubles each attempt, with jitter. */
  readonly downloadBackoffMs: number;
  readonly workerConcurrency: number;
  /** A job's lock; a crashed worker's job is taken over by another after about this long. */
  readonly workerLockMs: number;
  readonly shutdownTimeoutMs: number;
  readonly logLevel: string;
  readonly trustProxy: boolean | number | string;
}

export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

const int = (min: number, max = Number.MAX_SAFE_INTEGER, rangeMessage?: string) =>
  z
    .string()
    .regex(/^\d+$/, 'must be a whole number')
    .transform(Number)
    .refine((n) => n >= min && n <= max, rangeMessage ?? `must be between ${min} and ${max}`);

const bool = z.enum(['true', 'false']).transform((v) => v === 'true');

const list = (s: string) => s.split(',').map((item) => item.trim());

const secrets = z
  .string()
  .transform(list)
  .refine((items) => items.every((s) => s.length > 0), 'must not contain an empty secret');

const origin = z.string().transform((raw, ctx) => {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    ctx.addIssue({ code: 'custom', message: `"${raw}" is not a URL` });
    return z.NEVER;
  }
  const bare = url.pathname === '/' && !url.search && !url.hash && !url.username && !url.password;
  if (url.protocol !== 'https:' || !bare) {
    ctx.addIssue({ code: 'custom', message: `"${raw}" is not an origin https://host[:port]` });
    return z.NEVER;
  }
  return url.origin;
});

const trustProxy = z.string().transform((raw, ctx) => {
  const value =
    raw === 'true' ? true : raw === 'false' ? false : /^\d+$/.test(raw) ? Number(raw) : raw;
  try {
    // Express compiles the setting eagerly, so this is the exact check it will apply.
    express().set('trust proxy', value);
  } catch (error: unknown) {
    ctx.addIssue({ code: 'custom', message: `"${raw}" is not valid: ${String(error)}` });
  }
  return value;
});

const schema = z.object({
  WEBHOOK_SECRETS: secrets,
  PORT: int(0, 65535).default(3000),
  HOST: z.string().min(1).default('0.0.0.0'),
  WEBHOOK_PATH: z
    .string()
    .regex(/^\/[\w\-./]*$/, 'must be a path such as /webhooks')
    .default('/webhooks'),
  SIGNATURE_TOLERANCE_SECONDS: int(1, 86_400).default(300),
  MAX_BODY_BYTES: int(1, 100 * 1024 * 1024).default(1_048_576),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'must start with redis:// or rediss://')
    .default('redis://127.0.0.1:6379'),
  QUEUE_PREFIX: z
    .string()
    .regex(/^[^\s:]+$/, 'must be non-empty, without spaces or colons')
    .default('audio-webhooks'),
  DEDUPE_TTL_SECONDS: int(
    SENDER_RETRY_WINDOW_SECONDS + 1,
    Number.MAX_SAFE_INTEGER,
    `must exceed the sender's retry window of ${SENDER_RETRY_WINDOW_SECONDS} s (8 h 35 min 30 s)`,
  ).default(259_200),
  ROLE: z.enum(['web', 'worker', 'all']).default('all'),
  AUDIO_DIR: z.string().min(1).default('./data/audio'),
  CDN_URL: z.string().transform(list).pipe(z.array(origin)).default([]),
  DOWNLOAD_ALLOW_PRIVATE_IPS: bool.default(false),
  DOWNLOAD_MAX_BYTES: int(1).default(104_857_600),
  DOWNLOAD_TIMEOUT_MS: int(1).default(60_000),
  DOWNLOAD_ATTEMPTS: int(1, 100).default(8),
  DOWNLOAD_BACKOFF_MS: int(1).default(2_000),
  WORKER_CONCURRENCY: int(1, 1000).default(8),
  WORKER_LOCK_MS: int(1000).default(30_000),
  SHUTDOWN_TIMEOUT_MS: int(0).default(25_000),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  TRUST_PROXY: trustProxy.default('loopback'),
});

/**
 * Reads the environment into a frozen Config. Every bad variable is reported in one ConfigError,
 * so an operator fixes them all in one go. An empty variable counts as unset.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const present = Object.fromEntries(
    Object.keys(schema.shape).flatMap((key) => {
      const value = env[key];
      return value === undefined || value === '' ? [] : [[key, value]];
    }),
  );
  const result = schema.safeParse(present);
  if (!result.success) {
    throw new ConfigError(
      result.error.issues.map((issue) => {
        const name = issue.path[0] === undefined ? 'environment' : String(issue.path[0]);
        const message = issue.code === 'invalid_type' ? 'is required' : issue.message;
        return `${name} ${message}`;
      }),
    );
  }
  const e = result.data;
  return Object.freeze({
    webhookSecrets: Object.freeze(e.WEBHOOK_SECRETS),
    port: e.PORT,
    host: e.HOST,
    webhookPath: e.WEBHOOK_PATH,
    signatureToleranceSeconds: e.SIGNATURE_TOLERANCE_SECONDS,
    maxBodyBytes: e.MAX_BODY_BYTES,
    redisUrl: e.REDIS_URL,
    queuePrefix: e.QUEUE_PREFIX,
    dedupeTtlSeconds: e.DEDUPE_TTL_SECONDS,
    role: e.ROLE,
    audioDir: e.AUDIO_DIR,
    cdnOrigins: Object.freeze(e.CDN_URL),
    downloadAllowPrivateIps: e.DOWNLOAD_ALLOW_PRIVATE_IPS,
    downloadMaxBytes: e.DOWNLOAD_MAX_BYTES,
    downloadTimeoutMs: e.DOWNLOAD_TIMEOUT_MS,
    downloadAttempts: e.DOWNLOAD_ATTEMPTS,
    downloadBackoffMs: e.DOWNLOAD_BACKOFF_MS,
    workerConcurrency: e.WORKER_CONCURRENCY,
    workerLockMs: e.WORKER_LOCK_MS,
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    logLevel: e.LOG_LEVEL,
    trustProxy: e.TRUST_PROXY,
  });
}
