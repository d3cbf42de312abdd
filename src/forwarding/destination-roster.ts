import type { Destination } from './settings/destinations.js';
import { resolveDestinations } from './settings/resolve-destinations.js';
import type { RedisConnection } from '../redis/connections.js';

/** A destination some worker forwards to, as the roster shows it: nothing that can hold a secret. */
export interface RosterEntry {
  readonly name: string;
  readonly kind: Destination['kind'];
}

/**
 * How long an announced destination stays listed: a destination a restarted worker no longer
 * names leaves the roster this long after the last announcement of it. Three announcements fit
 * in it, so one missed (Redis busy, a slow event loop) does not drop a live destination.
 */
export const ROSTER_TTL_MS = 60_000;
const ANNOUNCE_EVERY_MS = ROSTER_TTL_MS / 3;

const NOW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/**
 * KEYS[1] the roster hash (field: name, value: `<listed until, ms> <kind>`), ARGV[1] the TTL in
 * ms, then pairs of name and kind. Lists them until now + TTL by Redis's clock (every process's
 * the same), forgets the entries whose time has passed, and lets the hash itself expire with
 * its newest entry when no worker announces any more.
 */
const ANNOUNCE = `${NOW}
local expires = now + tonumber(ARGV[1])
for i = 2, #ARGV, 2 do
  redis.call('HSET', KEYS[1], ARGV[i], string.format('%d %s', expires, ARGV[i + 1]))
end
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  if tonumber(string.match(all[i + 1], '^%d+')) < now then redis.call('HDEL', KEYS[1], all[i]) end
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1`;

/** KEYS[1] the roster hash: the entries still listed, as name, kind, name, kind… */
const LIST = `${NOW}
local listed = {}
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local expires, kind = string.match(all[i + 1], '^(%d+) (.*)$')
  if expires and tonumber(expires) >= now then
    listed[#listed + 1] = all[i]
    listed[#listed + 1] = kind
  end
end
return listed`;

const rosterKey = (prefix: string) => `${prefix}:forward:roster`;

const KINDS: readonly string[] = ['http', 'nats', 'amqp'] satisfies Destination['kind'][];
const isKind = (kind: string): kind is Destination['kind'] => KINDS.includes(kind);

/**
 * The destinations the workers forward to, in Redis (one hash under QUEUE_PREFIX), so that a CLI
 * run in a shell without FORWARD_URLS or FORWARD_CONFIG still knows them. Only each one's name
 * and kind are kept: the name never holds a credential (settings/destinations.ts).
 */
export async function listedDestinations(
  redis: RedisConnection,
  prefix: string,
): Promise<readonly RosterEntry[]> {
  const reply = (await redis.eval(LIST, 1, rosterKey(prefix))) as string[];
  const entries: RosterEntry[] = [];
  for (let i = 0; i + 1 < reply.length; i += 2) {
    const [name, kind] = [reply[i] ?? '', reply[i + 1] ?? ''];
    if (isKind(kind)) entries.push({ name, kind });
  }
  return entries.sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * A worker's part: announces its destinations now and every ANNOUNCE_EVERY_MS until stopped.
 * A failed announcement is reported and tried again at the next turn; forwarding goes on.
 */
export function announceDestinations(
  redis: RedisConnection,
  prefix: string,
  destinations: readonly RosterEntry[],
  reportError: (error: unknown, msg: string) => void,
): { close(): Promise<void> } {
  const pairs = destinations.flatMap(({ name, kind }) => [name, kind]);
  let running: Promise<unknown> | undefined;
  const announce = () => {
    running ??= redis
      .eval(ANNOUNCE, 1, rosterKey(prefix), ROSTER_TTL_MS, ...pairs)
      .catch((error: unknown) => {
        reportError(error, 'forward destinations not announced');
      })
      .finally(() => (running = undefined));
  };
  announce();
  const timer = setInterval(announce, ANNOUNCE_EVERY_MS);
  timer.unref();
  return {
    async close() {
      clearInterval(timer);
      await running;
    },
  };
}

/**
 * The destinations this process's own FORWARD_URLS and FORWARD_CONFIG name, then those only the
 * workers announced: the CLI and the inspector often run where neither is set.
 */
export async function knownDestinations(
  config: Parameters<typeof resolveDestinations>[0],
  redis: RedisConnection,
  prefix: string,
): Promise<readonly RosterEntry[]> {
  const own = resolveDestinations(config).map(({ name, kind }) => ({ name, kind }));
  const listed = await listedDestinations(redis, prefix);
  return [...own, ...listed.filter(({ name }) => !own.some((mine) => mine.name === name))];
}
