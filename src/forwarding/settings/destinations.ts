import { createHash } from 'node:crypto';

import type { MessageFilter } from './message-filter.js';

/**
 * What FORWARD_CONFIG may set per destination; a FORWARD_URLS entry sets none of it. Absent:
 * every message, FORWARD_ATTEMPTS, FORWARD_TIMEOUT_MS, no limit (resolveDestinations fills in).
 */
export interface DestinationOptions {
  readonly filter?: MessageFilter;
  readonly attempts?: number;
  readonly timeoutMs?: number;
  readonly ratePerSecond?: number;
}

/** The brokers and endpoints a handled delivery is forwarded to (FORWARD_URLS, FORWARD_CONFIG). */
export type Destination = DestinationOptions &
  (
    | { readonly kind: 'http'; readonly url: URL; readonly name: string }
    | { readonly kind: 'nats'; readonly url: URL; readonly name: string; readonly subject: string }
    | {
        readonly kind: 'amqp';
        readonly url: URL;
        readonly name: string;
        readonly exchange: string;
        readonly routingKey: string;
      }
  );

/**
 * Parses FORWARD_URLS' comma-separated list. `url` keeps the credentials for the client only;
 * `name` is what logs, metrics, `failures`, the CLI and the forward jobs in Redis show: the
 * scheme, host and port and a short hash of the rest (destinationName). A problem names the
 * entry by position and, once it parses, by name: never by its text, which may hold a secret.
 */
export function parseDestinations(
  raw: string,
): { destinations: Destination[] } | { problem: string } {
  const destinations: Destination[] = [];
  const entries = raw.split(',').map((entry) => entry.trim());
  for (const [index, entry] of entries.entries()) {
    if (entry === '') {
      return { problem: `entry ${index + 1} is empty (a comma too many?)` };
    }
    const parsed = parseDestination(entry, `entry ${index + 1}`);
    if ('problem' in parsed) return parsed;
    const earlier = destinations.findIndex((other) => other.name === parsed.destination.name);
    if (earlier !== -1) {
      return { problem: `entries ${earlier + 1} and ${index + 1} name one destination` };
    }
    destinations.push(parsed.destination);
  }
  return { destinations };
}

const SCHEMES = 'http://, https://, nats:// or amqp:// (amqps://)';
/** A JetStream subject to publish to: tokens of safe characters, no wildcards. */
const SUBJECT = /^[\w-]+(\.[\w-]+)*$/;

/**
 * One destination's URL. `label` says where it was set (`entry 2` of FORWARD_URLS, `destination
 * 2` of FORWARD_CONFIG); `given` is FORWARD_CONFIG's `name`, which replaces the shown name.
 */
export function parseDestination(
  entry: string,
  label: string,
  given?: string,
): { destination: Destination } | { problem: string } {
  const named = given === undefined ? label : `${label} (${given})`;
  let url: URL;
  try {
    url = new URL(entry);
  } catch {
    return { problem: `${named} is not a URL (${SCHEMES})` };
  }
  const name = given ?? destinationName(url);
  const where = `${label} (${name})`;
  if (url.hash !== '') return { problem: `${where}: a URL with a #fragment` };
  if (url.hostname === '') return { problem: `${named} has no host` };
  switch (url.protocol) {
    case 'http:':
    case 'https:':
      return { destination: { kind: 'http', url, name } };
    case 'nats:': {
      const subject = decodeURIComponent(url.pathname.slice(1));
      if (!SUBJECT.test(subject))
        return { problem: `${where}: the path must be a subject such as /audio.stored` };
      if (url.search !== '') return { problem: `${where}: no query is read` };
      return { destination: { kind: 'nats', url, name, subject } };
    }
    case 'amqp:':
    case 'amqps:':
      return amqpDestination(url, name, where);
    default:
      return { problem: `${named}: unknown scheme ${url.protocol} (${SCHEMES})` };
  }
}

function amqpDestination(
  url: URL,
  name: string,
  where: string,
): { destination: Destination } | { problem: string } {
  const exchange = url.searchParams.get('exchange') ?? '';
  const routingKey = url.searchParams.get('routing_key') ?? '';
  const unknown = [...url.searchParams.keys()].filter(
    (key) => key !== 'exchange' && key !== 'routing_key',
  );
  if (unknown.length > 0) {
    return { problem: `${where}: unknown parameter ${unknown.join(', ')} (exchange, routing_key)` };
  }
  if (exchange === '' && routingKey === '') {
    // The default exchange with an empty key routes nowhere: every message would be returned.
    return { problem: `${where}: needs exchange= and/or routing_key=` };
  }
  return { destination: { kind: 'amqp', url, name, exchange, routingKey } };
}

const DEFAULT_PORTS: Readonly<Record<string, string>> = {
  'http:': '80',
  'https:': '443',
  'nats:': '4222',
  'amqp:': '5672',
  'amqps:': '5671',
};

/**
 * A destination's shown name: `<scheme>://<host>:<port>~<8 hex digits>`. Slack's, Discord's and
 * Teams' webhook URLs hold their secret in the path, AMQP's vhost and NATS's subject share the
 * path with it, and a query may hold a token: none of them is shown. The hash (of the URL without
 * user and password, so it gives no password away to a guess) tells two destinations on one
 * host apart; 32 bits of a path's hash say nothing of a token that is itself random.
 */
export function destinationName(url: URL): string {
  const port = url.port || DEFAULT_PORTS[url.protocol] || '';
  const bare = new URL(url.href);
  bare.username = '';
  bare.password = '';
  const hash = createHash('sha256').update(bare.href).digest('hex').slice(0, 8);
  return `${url.protocol}//${url.hostname}:${port}~${hash}`;
}
