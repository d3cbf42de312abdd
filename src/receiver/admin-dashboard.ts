import { createHash, timingSafeEqual } from 'node:crypto';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { Router, type Request, type RequestHandler } from 'express';
import type { Logger } from 'pino';
import { RateLimiterRedis, type RateLimiterRes } from 'rate-limiter-flexible';
import { isAdminHost } from './admin-hosts.js';
import { guessKey } from './guess-key.js';
import { OWN_ORIGIN_POLICY, OwnOriginAdapter } from './own-origin-board.js';
import { createForwardQueue } from '../forwarding/forward-queue.js';
import type { DeliveryQueue } from '../queue/delivery-queue.js';
import type { RedisConnection } from '../redis/connections.js';
import { INSPECTOR_API, INSPECTOR_PAGE, inspectorApi } from '../inspector/api-routes.js';
import { boardShardPrefix, createInspector, type InspectorDeps } from '../inspector/inspector.js';
import { inspectorPages } from '../inspector/page-routes.js';

export const ADMIN_PATH = '/admin/queues';
export const ADMIN_USER = 'admin';
const REALM = 'Basic realm="audio-webhooks dashboard", charset="UTF-8"';
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Wrong passwords one client address may try per window, counted across every process. */
export const DASHBOARD_GUESSES = { points: 10, windowSeconds: 15 * 60 } as const;
/** A dashboard request that has not been answered by then gets 503 (Redis stalled, say). */
const DASHBOARD_DEADLINE_MS = 10_000;

export interface DashboardOptions {
  readonly password: string;
  /** No retry, remove, clean, pause or add: the board only shows. */
  readonly readOnly: boolean;
  /** ADMIN_HOSTS: the names a change's Origin may carry, besides IP literals and localhost. */
  readonly hosts: readonly string[];
  /** Each shard's deliveries queue, by index: the board shows one queue per shard. */
  readonly queues: readonly [DeliveryQueue, ...DeliveryQueue[]];
  /** Where wrong passwords are counted: shared by every receiver process and replica. */
  readonly redis: RedisConnection;
  /** Key prefix of the counts (QUEUE_PREFIX). */
  readonly prefix: string;
  readonly logger: Logger;
  /** The delivery inspector's parts beside the queue and Redis above (inspector/). */
  readonly inspector: Omit<InspectorDeps, 'redis' | 'prefix' | 'queues'>;
}

/**
 * bull-board at /admin/queues behind HTTP Basic auth. Layers, in order:
 * 1. a deadline: whatever Redis does, a dashboard request is answered;
 * 2. guesses are counted in Redis, per client address (an IPv6 client per /64: guess-key.ts), by
 *    rate-limiter-flexible (one atomic script per attempt, any topology, and it lets us count only
 *    what we choose: express-rate-limit counts requests and un-counts successes after the answer,
 *    which parallel guesses outrun). The address is `req.ip`: on INTERNAL_PORT the connecting
 *    socket's, since that app trusts no proxy (receiver.ts), so a client that rotates
 *    X-Forwarded-For still spends one budget; on a shared PORT, the one TRUST_PROXY's proxies name.
 *    Only wrong passwords count: each is added to the count in one atomic step and answered
 *    401 only while the count is within 10, so however many arrive at once, across every
 *    process, at most 10 wrong ones per 15 minutes are ever answered as wrong. The right one
 *    adds nothing (20 operators behind one NAT address all get in) and is let in only while
 *    fewer than 10 wrong ones were counted; past that every attempt gets 429 with Retry-After,
 *    the right password included. A request without credentials is not counted: browsers send
 *    each new path bare first and add the credentials after the 401 challenge;
 * 3. Basic auth, compared in constant time; a failure logged with whether the user name was
 *    `admin`, never the name typed or the password;
 * 4. changes: refused outright when read-only; otherwise only from the dashboard's own page
 *    (Origin must name this host, by a name ADMIN_HOSTS allows). Basic credentials ride along
 *    on every request the browser makes, a forged form post from another site included, so the
 *    Origin check is the CSRF defence (OWASP's "verify origin with standard headers"; bull-board
 *    has no token of its own).
 * In front of all four, the app's door (admin-hosts.ts) has already refused a Host that names
 * the service by no allowed name, and marked the answer no-store.
 * The page asks nothing of any other origin (OwnOriginAdapter, OWN_ORIGIN_POLICY).
 * The delivery inspector (inspector/: its page at /admin/deliveries, its API under /admin/api)
 * stands behind the same four layers and policy.
 */
export function adminDashboard(options: DashboardOptions): Router {
  const board = new OwnOriginAdapter().setBasePath(ADMIN_PATH);
  // Built here, not passed in, so it is shown whether or not this process forwards: the web
  // role often has no FORWARD_URLS. It borrows the receiver's connection, as the deliveries
  // queue does, so it opens nothing of its own to close.
  const forwards = createForwardQueue(options.redis, options.prefix);
  forwards.on('error', (error: unknown) => {
    options.logger.debug({ err: error }, 'forward queue error (dashboard)');
  });
  const { queues, readOnly } = options;
  // One queue per shard, named by boardQueueName (the inspector's job links name it too).
  const shards = queues.map(
    (queue, shard) =>
      new BullMQAdapter(queue, {
        readOnlyMode: readOnly,
        ...(queues.length === 1
          ? {}
          : {
              prefix: boardShardPrefix(shard),
              description: `the deliveries' shard ${String(shard)} of ${String(queues.length)} (QUEUE_SHARDS)`,
            }),
      }),
  );
  createBullBoard({
    queues: [...shards, new BullMQAdapter(forwards, { readOnlyMode: readOnly })],
    serverAdapter: board,
    options: { uiConfig: { boardTitle: 'audio-webhooks' } },
  });
  const guesses = new RateLimiterRedis({
    storeClient: options.redis,
    keyPrefix: `${options.prefix}:dashboard-guesses`,
    points: DASHBOARD_GUESSES.points,
    duration: DASHBOARD_GUESSES.windowSeconds,
  });
  const guards = [
    deadline(DASHBOARD_DEADLINE_MS),
    OWN_ORIGIN_POLICY,
    basicAuth(options.password, guesses, options.logger),
    changesAllowed(options.readOnly, options.hosts),
  ];
  const inspector = createInspector({
    ...options.inspector,
    redis: options.redis,
    prefix: options.prefix,
    queues,
  });
  const router = Router();
  router.use(ADMIN_PATH, ...guards, board.getRouter() as RequestHandler);
  // The delivery inspector: the same doors, guards and policy as the board.
  router.use([INSPECTOR_PAGE, INSPECTOR_API], ...guards);
  router.use(
    inspectorApi(inspector),
    inspectorPages(inspector, { readOnly: options.readOnly, events: options.inspector.events }),
  );
  return router;
}

function deadline(ms: number): RequestHandler {
  return (_req, res, next) => {
    const timer = setTimeout(() => {
      if (!res.headersSent)
        res.status(503).json({ detail: 'the dashboard did not answer in time' });
    }, ms);
    res.on('close', () => {
      clearTimeout(timer);
    });
    next();
  };
}

const digest = (value: string) => createHash('sha256').update(value).digest();

function basicAuth(password: string, guesses: RateLimiterRedis, logger: Logger): RequestHandler {
  // Hashing both sides gives equal lengths, so timingSafeEqual leaks neither length nor content.
  const expected = digest(`${ADMIN_USER}:${password}`);
  const challenge = (res: Parameters<RequestHandler>[1]) => {
    res.setHeader('WWW-Authenticate', REALM);
    res.status(401).json({ detail: 'dashboard credentials required' });
  };
  return async (req, res, next) => {
    const credentials = basicCredentials(req);
    const client = guessKey(req.ip);
    if (credentials === undefined && req.headers.authorization === undefined) {
      // A bare request is the first half of every browser login: not a guess.
      logger.debug({ ip: client, path: req.originalUrl.slice(0, 200) }, 'dashboard login asked');
      challenge(res);
      return;
    }
    const right = credentials !== undefined && timingSafeEqual(digest(credentials), expected);
    let count: RateLimiterRes;
    try {
      // One atomic script either way (so the answer's timing tells nothing): a wrong password
      // adds one to the count, the right one adds nothing and reads it.
      count = await guesses.penalty(client, right ? 0 : 1);
    } catch (error: unknown) {
      logger.error({ err: error }, 'cannot count dashboard logins: Redis unavailable');
      res.status(503).json({ detail: 'the dashboard is unavailable: Redis does not answer' });
      return;
    }
    // A wrong one is judged while it is within the 10 it made the count; the right one while
    // fewer than 10 wrong ones were counted before it.
    if (count.consumedPoints > DASHBOARD_GUESSES.points - (right ? 1 : 0)) {
      const seconds = Math.max(1, Math.ceil(count.msBeforeNext / 1000));
      res.setHeader('Retry-After', String(seconds));
      res.status(429).json({
        detail: `too many wrong dashboard passwords from this address; try again in ${seconds} s`,
      });
      return;
    }
    if (right) {
      next();
      return;
    }
    logger.warn(
      {
        ip: client,
        method: req.method,
        path: req.originalUrl.slice(0, 200),
        // Whether the user name was right, never the name: a password typed there would show.
        userIsAdmin:
          credentials === undefined
            ? undefined
            : credentials.slice(0, credentials.indexOf(':')) === ADMIN_USER,
        reason: credentials === undefined ? 'malformed credentials' : 'wrong credentials',
      },
      'dashboard login failed',
    );
    challenge(res);
  };
}

/** `user:password` from `Authorization: Basic …`, or undefined when absent or malformed. */
function basicCredentials(req: Request): string | undefined {
  const header = req.headers.authorization;
  const match = header === undefined ? null : /^Basic ([A-Za-z0-9+/]+=*)$/i.exec(header);
  if (match?.[1] === undefined || match[1].length > 1024) return undefined;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  return decoded.includes(':') ? decoded : undefined;
}

function changesAllowed(readOnly: boolean, hosts: readonly string[]): RequestHandler {
  return (req, res, next) => {
    if (SAFE_METHODS.has(req.method)) {
      next();
      return;
    }
    if (readOnly) {
      res.status(403).json({ detail: 'the dashboard is read-only (ADMIN_READ_ONLY=true)' });
      return;
    }
    if (!sameOrigin(req, hosts)) {
      res.status(403).json({
        detail:
          "a change needs an Origin header naming the dashboard's own origin (Origin: <scheme>://<the host and port it is reached by>): a browser sends it from the dashboard's page, a script must send it itself",
      });
      return;
    }
    next();
  };
}

/**
 * The browser's Origin names the host the request came to (scheme aside: TLS may end early), by
 * an allowed name: a page rebound to this address names its own, which Host then names too.
 */
function sameOrigin(req: Request, hosts: readonly string[]): boolean {
  const origin = req.headers.origin;
  const host = req.headers.host;
  if (origin === undefined || host === undefined) return false;
  if (
    req.headers['sec-fetch-site'] !== undefined &&
    req.headers['sec-fetch-site'] !== 'same-origin'
  )
    return false;
  try {
    const from = new URL(origin).host;
    return from === host.toLowerCase() && isAdminHost(from, hosts);
  } catch {
    return false;
  }
}
