import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { z } from 'zod';
import { connectionsFromLimit, openFileLimit, RESERVED_FILES } from '../util/open-file-limit.js';
import { autoOrInt, int, secrets } from './parsers.js';
import type { ParsedSettings, SettingSpec } from './setting-spec.js';

/** The smallest SIGNATURE_TOLERANCE_SECONDS: DEDUPE_TTL_SECONDS is checked against it when the tolerance set is not a number. */
export const MIN_TOLERANCE_SECONDS = 1;

/** MAX_CONNECTIONS at most. */
const MAX_CONNECTIONS = 1_000_000;

/** The HTTP receiver: where it listens, and what a delivery must be for it to be accepted. */
export const RECEIVER_SETTINGS = {
  WEBHOOK_SECRETS: {
    schema: secrets,
    required: true,
    readBy: ['web', 'cli', 'sandbox'],
    doc: 'comma-separated signing secrets; any one verifies a delivery (rotation); with a HOST other than loopback, each must be 24 characters or more after `whsec_` and not an example from this repository, else start-up is refused',
  },
  PORT: { schema: int(0, 65535), default: '3000', readBy: ['web', 'cli'], doc: 'HTTP port' },
  INTERNAL_PORT: {
    schema: int(1, 65535).optional(),
    readBy: ['web'],
    doc: 'when set, /metrics and /admin/queues are served only on this port (same HOST) and 404 on PORT; /healthz and /readyz on both',
  },
  HOST: {
    schema: z.string(),
    default: '127.0.0.1',
    readBy: ['web', 'worker'],
    doc: "HTTP listen address (also the worker's WORKER_HEALTH_PORT); `0.0.0.0` for every interface, as the Dockerfile, compose and deploy/ set it",
  },
  WEBHOOK_PATH: {
    schema: z.string().regex(/^\/[\w\-./]*$/, 'must be a path such as /webhooks'),
    default: '/webhooks',
    readBy: ['web', 'cli'],
    doc: 'path of the receiving endpoint',
  },
  SIGNATURE_TOLERANCE_SECONDS: {
    schema: int(MIN_TOLERANCE_SECONDS, 86_400),
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
  MAX_CONNECTIONS: {
    // Each connection holds a file descriptor, and a process out of them fails its accepts,
    // Redis connections and file opens alike; past the cap, connections are refused one by
    // one. `auto` sizes it from what the platform gives (open-file-limit.ts).
    schema: autoOrInt(
      () => connectionsFromLimit(openFileLimit(), MAX_CONNECTIONS),
      1,
      MAX_CONNECTIONS,
    ),
    default: 'auto',
    readBy: ['web'],
    doc: `open connections per listening port of a receiver process; more are closed as they arrive. \`auto\`: the process's open-file limit as read at start, less ${RESERVED_FILES} for Redis, the store and logs, never under ${RESERVED_FILES}. An idle connection is closed by the header timeout (20 s)`,
  },
} as const satisfies Record<string, SettingSpec>;

/** The receiver's settings, as parsed: what its listener and its webhook route read. */
export type ReceiverSettings = ParsedSettings<typeof RECEIVER_SETTINGS>;

/**
 * The example secrets this repository's files hold (.env.example, docker-compose.yml): anyone
 * can read them, so anyone could sign deliveries with them. A test keeps this list in step
 * with those files.
 */
export const PLACEHOLDER_SECRETS: readonly string[] = [
  'whsec_replace_me',
  'dev-only-secret-change-me',
];

/**
 * A signing secret's characters after its optional `whsec_` prefix, at least, where HOST lets
 * others reach the listener: 24 random characters are beyond guessing, while a shorter secret
 * is most often a hand-typed example.
 */
export const MIN_SECRET_CHARS = 24;

/** Why a secret must not guard a listener others can reach; undefined when it may. */
function weakness(secret: string): string | undefined {
  if (PLACEHOLDER_SECRETS.includes(secret)) return 'an example from this repository';
  if (secret.replace(/^whsec_/, '').length < MIN_SECRET_CHARS)
    return `shorter than ${MIN_SECRET_CHARS} characters after its whsec_ prefix`;
  return undefined;
}

/**
 * What is wrong with the secrets for a listener others can reach, as one phrase that names
 * entries by index (0: the first, as /metrics and the timeline number them) and never holds a
 * secret; undefined when every one is fit.
 */
export function weakSecrets(secrets: readonly string[]): string | undefined {
  const weak = secrets.flatMap((secret, at) => {
    const why = weakness(secret);
    return why === undefined ? [] : [secrets.length === 1 ? `is ${why}` : `index ${at} is ${why}`];
  });
  return weak.length === 0 ? undefined : weak.join(', ');
}

/**
 * True when HOST keeps the listener on this machine: `localhost`, or an address in 127.0.0.0/8
 * or ::1 (IPv4-mapped forms too). Only the forms a socket binds as written count (net.isIP is
 * strict where ipaddr.js would also read `127.1`); anything else is taken as reachable.
 */
export function isLoopback(host: string): boolean {
  if (host.toLowerCase() === 'localhost') return true;
  const address = host.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  if (isIP(address) === 0) return false;
  return ipaddr.process(address).range() === 'loopback';
}
