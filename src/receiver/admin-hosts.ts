import { isIP } from 'node:net';
import type { RequestHandler } from 'express';

/** `/admin` and everything under it, in any letter case (Express routes paths case-blind). */
const ADMIN_PATHS = /^\/admin(?:\/|$)/i;

/**
 * The name a `Host` header carries, lower-cased, without its port and a trailing dot; `[…]`
 * kept off an IPv6 literal. Undefined when there is no Host.
 */
function hostNameOf(host: string | undefined): string | undefined {
  if (host === undefined) return undefined;
  const bracketed = /^\[([^\]]*)\](?::\d*)?$/.exec(host);
  if (bracketed !== null) return bracketed[1]?.toLowerCase();
  return host.replace(/:\d*$/, '').toLowerCase().replace(/\.$/, '');
}

/**
 * True when `host` (a Host header or an Origin's host) names this service by a name its operator
 * gave (ADMIN_HOSTS), `localhost`, or an IP literal. A DNS-rebinding page reaches the service by
 * the attacker's own name, which the browser then sends as Host: that name is none of these.
 */
export function isAdminHost(host: string | undefined, allowed: readonly string[]): boolean {
  const name = hostNameOf(host);
  if (name === undefined || name === '') return false;
  return name === 'localhost' || isIP(name) !== 0 || allowed.includes(name);
}

/**
 * The door in front of the operators' surfaces. Every /admin/* answer is marked
 * `Cache-Control: no-store` (pages and the API hold payloads a browser must not keep on disk;
 * errors, 401s and 421s too, so no answer there is ever cached). A request whose Host names the
 * service by no allowed name gets 421 (Misdirected Request): every request when `everyPath`
 * (INTERNAL_PORT: metrics, probes and the dashboard alike), else only /admin/*. Set before the
 * routes, so bull-board's and the inspector's answers carry the header as well.
 */
export function adminHosts(
  allowed: readonly string[],
  { everyPath }: { everyPath: boolean },
): RequestHandler {
  const guard: RequestHandler = (req, res, next) => {
    const admin = ADMIN_PATHS.test(req.path);
    if (admin) res.setHeader('Cache-Control', 'no-store');
    if ((everyPath || admin) && !isAdminHost(req.headers.host, allowed)) {
      res.status(421).json({
        detail:
          'this service is not served under the host name in the Host header: reach it by an IP address, localhost, or a name listed in ADMIN_HOSTS',
      });
      return;
    }
    next();
  };
  return guard;
}
