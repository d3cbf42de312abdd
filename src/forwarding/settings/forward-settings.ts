import { z } from 'zod';
import { int, list } from '../../config/parsers.js';
import type { ParsedSettings, SettingSpec } from '../../config/setting-spec.js';
import { parseDestinations } from './destinations.js';
import { readForwardConfig } from './forward-config.js';

/**
 * FORWARD_SIGNING_KEY: comma-separated `whsk_<base64 of a 32-byte Ed25519 seed>` keys (more than
 * one while rotating); unset is none. The base64 must be canonical (it re-encodes to itself), so
 * no two spellings name one key. A problem never quotes the value: it is a private key.
 */
const signingKeys = z
  .string()
  .optional()
  .transform((raw, ctx) => {
    if (raw === undefined) return [];
    const keys = list(raw);
    if (keys.every(isSigningKey)) return keys;
    ctx.addIssue({
      code: 'custom',
      message:
        'must be whsk_ followed by the base64 of a 32-byte Ed25519 seed (several: comma-separated); docs/forwarding.md shows how to make one',
    });
    return z.NEVER;
  });

function isSigningKey(key: string): boolean {
  if (!key.startsWith('whsk_')) return false;
  const text = key.slice('whsk_'.length);
  const seed = Buffer.from(text, 'base64');
  return seed.length === 32 && seed.toString('base64') === text;
}

/** FORWARD_URLS: the destinations (destinations.ts); unset is the empty list. */
const forwardUrls = z
  .string()
  .optional()
  .transform((raw, ctx) => {
    if (raw === undefined) return [];
    const parsed = parseDestinations(raw);
    if ('destinations' in parsed) return parsed.destinations;
    ctx.addIssue({ code: 'custom', message: parsed.problem });
    return z.NEVER;
  });

/** FORWARD_CONFIG: a JSON file's destinations (forward-config.ts); unset is none. */
const forwardConfig = z
  .string()
  .optional()
  .transform((path, ctx) => {
    if (path === undefined) return [];
    const parsed = readForwardConfig(path);
    if ('destinations' in parsed) return parsed.destinations;
    ctx.addIssue({ code: 'custom', message: parsed.problem });
    return z.NEVER;
  });

/**
 * Forwarding every handled delivery to HTTP endpoints and brokers (docs/forwarding.md). The web
 * role reads the destinations too: the delivery inspector pauses and resumes them, its own as well
 * as those the workers announce.
 */
export const FORWARD_SETTINGS = {
  FORWARD_URLS: {
    schema: forwardUrls,
    key: 'forwardDestinations',
    readBy: ['web', 'worker', 'cli'],
    doc: 'comma-separated destinations every handled delivery is forwarded to, any mix: `http(s)://host/path` (POST, Standard Webhooks signed), `nats://host:port/<subject>` (JetStream), `amqp://user:pass@host:port[/vhost]?exchange=E&routing_key=R`; unset: none (docs/forwarding.md)',
  },
  FORWARD_CONFIG: {
    schema: forwardConfig,
    key: 'forwardConfigDestinations',
    readBy: ['web', 'worker', 'cli'],
    doc: 'path to a JSON file of destinations, with or instead of FORWARD_URLS, each with its own `name`, `filter`, `attempts`, `timeout_ms` and `rate_per_second`; unset: none (docs/forwarding.md)',
  },
  FORWARD_SECRET: {
    schema: z
      .string()
      .regex(
        /^whsec_(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$/,
        'must be whsec_ followed by a base64 key (openssl rand -base64 32)',
      )
      .optional(),
    // The web side too: start-up refuses an HTTP destination without it on every role.
    readBy: ['web', 'worker'],
    doc: '`whsec_<base64 key>`: signs HTTP forwards as Standard Webhooks `v1` (HMAC-SHA256); an HTTP destination needs this or FORWARD_SIGNING_KEY',
  },
  FORWARD_SIGNING_KEY: {
    schema: signingKeys,
    key: 'forwardSigningKeys',
    // The CLI too: `forward public-key` prints the public key of each.
    readBy: ['web', 'worker', 'cli'],
    doc: '`whsk_<base64 of a 32-byte Ed25519 seed>`: signs HTTP forwards as Standard Webhooks `v1a` (Ed25519), which a consumer verifies with the `whpk_` key `forward public-key` prints; comma-separated while rotating; an HTTP destination needs this or FORWARD_SECRET',
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
  FORWARD_PAUSE_AFTER: {
    schema: int(1),
    default: '20',
    readBy: ['worker', 'cli'],
    doc: 'a destination whose sends fail this many times in a row is paused for every worker: its messages wait without counting attempts until a probe succeeds',
  },
  FORWARD_PROBE_SECONDS: {
    schema: int(1),
    default: '30',
    readBy: ['worker', 'cli'],
    doc: 'a paused destination is probed (one message tried) at most once in this many seconds',
  },
  FORWARD_HOLD_SECONDS: {
    schema: int(1),
    default: '86400',
    readBy: ['worker'],
    doc: 'a message held longer than this (by a paused destination) fails as if its attempts had run out: listed by `failures`, sent again by `retry`',
  },
} as const satisfies Record<string, SettingSpec>;

/** The forwarding settings, as parsed: what forwarding/ reads. */
export type ForwardSettings = ParsedSettings<typeof FORWARD_SETTINGS>;
