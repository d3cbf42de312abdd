import { writeFileSync } from 'node:fs';
import { CUSTOM_EVENT } from './traffic-plan.js';
import type { DestinationName } from './fault-plan.js';

/**
 * Where forwards go, and which destination wants what. The AMQP destination has a FORWARD_CONFIG
 * filter: key revocations, and audio of the voice `sage` (audio.ready and the custom event). The
 * checker's `wantsOf` says the same in code; a unit test holds the two together.
 */
export const AMQP_FILTER = {
  $or: [
    { type: 'key.revoked' },
    { type: { $in: ['audio.ready', CUSTOM_EVENT] }, data: { voice: { $in: ['sage'] } } },
  ],
} as const;

/** What the filter means: the destinations that want a message of `event` with `data`. */
export function wantsOf(
  event: string,
  data: { readonly voice?: unknown },
  filterActive: boolean,
): DestinationName[] {
  const amqp =
    !filterActive ||
    event === 'key.revoked' ||
    ((event === 'audio.ready' || event === CUSTOM_EVENT) && data.voice === 'sage');
  return amqp ? ['http', 'nats', 'amqp'] : ['http', 'nats'];
}

/**
 * The forwarding settings: FORWARD_CONFIG (a file, docs/forwarding.md) when the service reads it,
 * else FORWARD_URLS with the same three destinations and no filter (the build in hand predates
 * FORWARD_CONFIG: it would ignore the file and forward nothing).
 */
export function forwardingEnv(
  urls: Readonly<Record<DestinationName, string>>,
  secret: string,
  configFile: string,
  configSupported: boolean,
): Record<string, string> {
  if (!configSupported)
    return { FORWARD_URLS: [urls.http, urls.nats, urls.amqp].join(','), FORWARD_SECRET: secret };
  writeFileSync(
    configFile,
    `${JSON.stringify(
      {
        destinations: [
          { url: urls.http, name: 'http' },
          { url: urls.nats, name: 'nats' },
          { url: urls.amqp, name: 'amqp', filter: AMQP_FILTER },
        ],
      },
      null,
      2,
    )}\n`,
  );
  return { FORWARD_CONFIG: configFile, FORWARD_SECRET: secret };
}
