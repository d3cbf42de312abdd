/** The brokers and endpoints a handled delivery is forwarded to (FORWARD_URLS). */
export type Destination =
  | { readonly kind: 'http'; readonly url: URL; readonly name: string }
  | { readonly kind: 'nats'; readonly url: URL; readonly name: string; readonly subject: string }
  | {
      readonly kind: 'amqp';
      readonly url: URL;
      readonly name: string;
      readonly exchange: string;
      readonly routingKey: string;
    };

/**
 * Parses FORWARD_URLS' comma-separated list. `url` keeps the credentials for the client only;
 * `name` is the destination without them (no user, password or HTTP query, where tokens live):
 * what logs, metrics, `failures` and the forward jobs in Redis show. A problem names the entry
 * by `name`, or by position when it does not parse (its text may hold a password).
 */
export function parseDestinations(
  raw: string,
): { destinations: Destination[] } | { problem: string } {
  const destinations: Destination[] = [];
  const entries = raw.split(',').map((entry) => entry.trim());
  for (const [index, entry] of entries.entries()) {
    const parsed = parseDestination(entry, index + 1);
    if ('problem' in parsed) return parsed;
    if (destinations.some((other) => other.name === parsed.destination.name)) {
      return { problem: `names ${parsed.destination.name} twice` };
    }
    destinations.push(parsed.destination);
  }
  return { destinations };
}

const SCHEMES = 'http://, https://, nats:// or amqp:// (amqps://)';
/** A JetStream subject to publish to: tokens of safe characters, no wildcards. */
const SUBJECT = /^[\w-]+(\.[\w-]+)*$/;

function parseDestination(
  entry: string,
  position: number,
): { destination: Destination } | { problem: string } {
  let url: URL;
  try {
    url = new URL(entry);
  } catch {
    return { problem: `entry ${position} is not a URL (${SCHEMES})` };
  }
  const where = `${url.protocol}//${url.host}${url.pathname}`;
  if (url.hash !== '') return { problem: `${where}: a URL with a #fragment` };
  if (url.hostname === '') return { problem: `entry ${position} has no host` };
  switch (url.protocol) {
    case 'http:':
    case 'https:':
      return { destination: { kind: 'http', url, name: where } };
    case 'nats:': {
      const subject = decodeURIComponent(url.pathname.slice(1));
      const name = `nats://${url.hostname}:${url.port || '4222'}/${subject}`;
      if (!SUBJECT.test(subject))
        return { problem: `${name}: the path must be a subject such as /audio.stored` };
      if (url.search !== '') return { problem: `${name}: no query is read` };
      return { destination: { kind: 'nats', url, name, subject } };
    }
    case 'amqp:':
    case 'amqps:':
      return amqpDestination(url);
    default:
      return { problem: `entry ${position}: unknown scheme ${url.protocol} (${SCHEMES})` };
  }
}

function amqpDestination(url: URL): { destination: Destination } | { problem: string } {
  const port = url.port || (url.protocol === 'amqps:' ? '5671' : '5672');
  const exchange = url.searchParams.get('exchange') ?? '';
  const routingKey = url.searchParams.get('routing_key') ?? '';
  const query = new URLSearchParams({ exchange, routing_key: routingKey });
  const name = `${url.protocol}//${url.hostname}:${port}${url.pathname}?${query.toString()}`;
  const unknown = [...url.searchParams.keys()].filter(
    (key) => key !== 'exchange' && key !== 'routing_key',
  );
  if (unknown.length > 0) {
    return { problem: `${name}: unknown parameter ${unknown.join(', ')} (exchange, routing_key)` };
  }
  if (exchange === '' && routingKey === '') {
    // The default exchange with an empty key routes nowhere: every message would be returned.
    return { problem: `${name}: needs exchange= and/or routing_key=` };
  }
  return { destination: { kind: 'amqp', url, name, exchange, routingKey } };
}
