import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { Agent, buildConnector } from 'undici';
import { BlockedAddressError } from './download-errors.js';
import { isPublicAddress } from './ip-policy.js';

export interface GuardedAgentOptions {
  readonly allowPrivateIps: boolean;
  /**
   * Extra trusted CA certificates (PEM), e.g. a local test CDN's.
   * @defaultValue none: Node's bundled CAs only
   */
  readonly ca?: string | readonly string[];
  /** Bounds on connect, response headers and silence between body chunks. */
  readonly connectTimeoutMs: number;
  readonly headersTimeoutMs: number;
  readonly bodyIdleTimeoutMs: number;
  /**
   * Resolves a name to all its addresses (a test stands in for DNS).
   * @defaultValue Node's DNS lookup, every address
   */
  readonly resolve?: Resolver;
}

export type Resolver = (
  hostname: string,
  callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

const systemResolver: Resolver = (hostname, callback) => {
  dnsLookup(hostname, { all: true }, callback);
};

/** DNS answers are filtered: a name that resolves only to private addresses fails here. */
function guardedLookup(allowPrivate: boolean, resolve: Resolver): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, (error, addresses) => {
      if (error) {
        callback(error, '', 0);
        return;
      }
      const usable = allowPrivate ? addresses : addresses.filter((a) => isPublicAddress(a.address));
      const first = usable[0];
      if (first === undefined) {
        callback(new BlockedAddressError(hostname, addresses[0]?.address), '', 0);
        return;
      }
      // Node asks with `all: true` when it races address families (autoSelectFamily).
      if (options.all) (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, usable);
      else callback(null, first.address, first.family);
    });
  };
}

/**
 * An undici Agent that checks the address it actually connects to, three times over: DNS answers
 * are filtered, IP literals (which skip DNS) are checked before connecting, and the socket's
 * remote address is checked once connected — so DNS rebinding between check and use gains nothing.
 */
export function createGuardedAgent(options: GuardedAgentOptions): Agent {
  const allow = options.allowPrivateIps;
  const base = buildConnector({
    timeout: options.connectTimeoutMs,
    lookup: guardedLookup(allow, options.resolve ?? systemResolver),
    ...(options.ca === undefined ? {} : { ca: options.ca as string[] }),
  });
  return new Agent({
    headersTimeout: options.headersTimeoutMs,
    bodyTimeout: options.bodyIdleTimeoutMs,
    connect(connectOptions, callback) {
      const host = connectOptions.hostname.replace(/^\[|\]$/g, '');
      if (!allow && isIP(host) !== 0 && !isPublicAddress(host)) {
        callback(new BlockedAddressError(host, host), null);
        return;
      }
      base(connectOptions, (error, socket) => {
        if (error) {
          callback(error, null);
          return;
        }
        const remote = socket.remoteAddress;
        if (!allow && (remote === undefined || !isPublicAddress(remote))) {
          socket.destroy();
          callback(new BlockedAddressError(host, remote), null);
          return;
        }
        callback(null, socket);
      });
    },
  });
}
