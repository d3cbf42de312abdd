import { z } from 'zod';
import { int, origin } from '../config/parsers.js';
import type { ParsedSettings } from '../config/config.js';
import type { SettingSpec } from '../config/settings.js';
import type { RedisConfig } from '../redis/connections.js';

const positive = z
  .string()
  .regex(/^\d+(\.\d+)?$/, 'must be a positive number')
  .transform(Number)
  .refine((n) => n > 0 && n <= 1000, 'must be above 0 and at most 1000');

const webhookUrl = z.string().refine((raw) => {
  try {
    return /^https?:$/.test(new URL(raw).protocol);
  } catch {
    return false;
  }
}, 'must be an http:// or https:// URL');

export interface SandboxSettingSpec extends SettingSpec {
  /** The command-line flag that sets it (`--port`); the flag wins over the variable. */
  readonly flag?: string;
}

/**
 * The sandbox's settings (docs/sandbox.md), declared once: flag, variable,
 * default, doc. REDIS_URL and WEBHOOK_SECRETS come from the service's own table.
 */
export const SANDBOX_SETTINGS = {
  SANDBOX_HOST: {
    flag: 'host',
    schema: z.string(),
    default: '127.0.0.1',
    readBy: ['sandbox'],
    doc: 'listen address of the API and the CDN',
  },
  SANDBOX_PORT: {
    flag: 'port',
    schema: int(0, 65535),
    default: '4010',
    readBy: ['sandbox'],
    doc: 'the API, plain HTTP',
  },
  SANDBOX_CDN_PORT: {
    flag: 'cdn-port',
    schema: int(0, 65535),
    default: '4443',
    readBy: ['sandbox'],
    doc: 'HTTPS server of the generated audio (self-signed certificate made at first start)',
  },
  SANDBOX_PUBLIC_HOST: {
    flag: 'public-host',
    schema: z.string().optional(),
    readBy: ['sandbox'],
    doc: 'the name others reach the sandbox by (in its URLs and certificate); default: --host, or 127.0.0.1 for a wildcard host',
  },
  SANDBOX_WEBHOOK_URL: {
    flag: 'webhook-url',
    schema: webhookUrl,
    default: 'http://127.0.0.1:3000/webhooks',
    readBy: ['sandbox'],
    doc: 'where deliveries are POSTed',
  },
  SANDBOX_SECRET: {
    flag: 'secret',
    schema: z.string().optional(),
    readBy: ['sandbox'],
    doc: 'signing secret; default: the first of WEBHOOK_SECRETS',
  },
  SANDBOX_TIME_SCALE: {
    flag: 'time-scale',
    schema: positive,
    default: '1',
    readBy: ['sandbox'],
    doc: 'multiplies the retry waits only (0.001: 30 s → 30 ms); t is always the real time',
  },
  SANDBOX_RATE_WINDOW_MS: {
    flag: 'rate-window-ms',
    schema: int(1),
    default: '60000',
    readBy: ['sandbox'],
    doc: 'length of the sliding window the limits count in',
  },
  SANDBOX_DELIVERY_TIMEOUT_MS: {
    flag: 'delivery-timeout-ms',
    schema: int(1),
    default: '15000',
    readBy: ['sandbox'],
    doc: 'an attempt with no answer by then failed',
  },
  SANDBOX_DIR: {
    flag: 'dir',
    schema: z.string(),
    default: './data/sandbox',
    readBy: ['sandbox'],
    doc: 'certificate, keys, audio',
  },
  SANDBOX_PREFIX: {
    schema: z.string().regex(/^[^\s:]+$/, 'must be non-empty, without spaces or colons'),
    default: 'sandbox',
    readBy: ['sandbox'],
    doc: 'key prefix of everything the sandbox keeps in Redis',
  },
} as const satisfies Record<string, SandboxSettingSpec>;

export interface SandboxConfig extends RedisConfig {
  readonly host: string;
  readonly port: number;
  readonly cdnPort: number;
  /** The host in the URLs the sandbox hands out, and in its certificate. */
  readonly publicHost: string;
  readonly webhookUrl: string;
  readonly secret: string;
  /** The second secret of the `rotated_secret` fault (see sandboxConfig). */
  readonly rotatedSecret: string;
  readonly timeScale: number;
  readonly rateWindowMs: number;
  readonly deliveryTimeoutMs: number;
  readonly dir: string;
  readonly prefix: string;
}

/** A wildcard listen address is no address to hand out. */
export function publicHostFor(host: string, explicit: string | undefined): string {
  if (explicit !== undefined) return explicit;
  return host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
}

/** `https://127.0.0.1:4443`, with IPv6 hosts bracketed. */
export function originOf(scheme: 'http' | 'https', host: string, port: number): string {
  const url = `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}`;
  return scheme === 'https' ? origin.parse(url) : new URL(url).origin;
}

/**
 * The sandbox's configuration from flags (which win) and the environment. The signing secret is
 * --secret, else the first of WEBHOOK_SECRETS. The `rotated_secret` fault signs with it and a
 * second secret: the next of WEBHOOK_SECRETS, else `<secret>_rotated`.
 */
export function sandboxConfig(
  settings: ParsedSettings<typeof SANDBOX_SETTINGS>,
  service: RedisConfig & { readonly webhookSecrets: readonly string[] },
): SandboxConfig | { readonly error: string } {
  const secret = settings.sandboxSecret ?? service.webhookSecrets[0];
  if (secret === undefined)
    return { error: 'no signing secret: pass --secret or set WEBHOOK_SECRETS' };
  const prefix = settings.sandboxPrefix;
  if (service.redisClusterNodes.length > 0 && !/\{[^{}]+\}/.test(prefix)) {
    // Its deliveries are a BullMQ queue and its records change two keys at once: one slot.
    return {
      error: `SANDBOX_PREFIX must hold a {hash tag} such as {${prefix}} with REDIS_CLUSTER_NODES`,
    };
  }
  const host = settings.sandboxHost;
  return {
    host,
    port: settings.sandboxPort,
    cdnPort: settings.sandboxCdnPort,
    publicHost: publicHostFor(host, settings.sandboxPublicHost),
    webhookUrl: settings.sandboxWebhookUrl,
    secret,
    rotatedSecret: service.webhookSecrets.find((s) => s !== secret) ?? `${secret}_rotated`,
    timeScale: settings.sandboxTimeScale,
    rateWindowMs: settings.sandboxRateWindowMs,
    deliveryTimeoutMs: settings.sandboxDeliveryTimeoutMs,
    dir: settings.sandboxDir,
    prefix,
    redisUrl: service.redisUrl,
    redisSentinels: service.redisSentinels,
    redisSentinelName: service.redisSentinelName,
    redisClusterNodes: service.redisClusterNodes,
    ...(service.redisPassword === undefined ? {} : { redisPassword: service.redisPassword }),
  };
}
