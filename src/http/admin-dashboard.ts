import { createHash, timingSafeEqual } from 'node:crypto';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import { Router, type Request, type RequestHandler } from 'express';
import { slowDown } from 'express-slow-down';
import type { Logger } from 'pino';
import type { DeliveryQueue } from '../queue/delivery-queue.js';

export const ADMIN_PATH = '/admin/queues';
export const ADMIN_USER = 'admin';
const REALM = 'Basic realm="audio-webhooks dashboard", charset="UTF-8"';
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export interface DashboardOptions {
  readonly password: string;
  /** No retry, remove, clean, pause or add: the board only shows. */
  readonly readOnly: boolean;
  readonly queue: DeliveryQueue;
  readonly logger: Logger;
}

/**
 * bull-board at /admin/queues behind HTTP Basic auth. Layers, in order:
 * 1. wrong passwords slow down: express-slow-down counts requests that carry credentials and
 *    are refused (the 6th in 15 minutes from one address waits 0.5 s, then 1 s, … up to 10 s).
 *    A request without credentials is not counted: browsers send each new path bare first
 *    and add the credentials after the 401 challenge, so those are the protocol, not a guess;
 * 2. Basic auth, compared in constant time, a wrong password logged without the password;
 * 3. changes: refused outright when read-only; otherwise only from the dashboard's own page
 *    (Origin must name this host). Basic credentials ride along on every request the browser
 *    makes, a forged form post from another site included, so the Origin check is the CSRF
 *    defence (OWASP's "verify origin with standard headers"; bull-board has no token of its own).
 */
export function adminDashboard(options: DashboardOptions): Router {
  const board = new ExpressAdapter().setBasePath(ADMIN_PATH);
  createBullBoard({
    queues: [new BullMQAdapter(options.queue, { readOnlyMode: options.readOnly })],
    serverAdapter: board,
    options: { uiConfig: { boardTitle: 'audio-webhooks' } },
  });
  const router = Router();
  router.use(
    ADMIN_PATH,
    slowDown({
      windowMs: 15 * 60_000,
      delayAfter: 5,
      delayMs: (hits) => (hits - 5) * 500,
      maxDelayMs: 10_000,
      skipSuccessfulRequests: true,
      skip: (req) => req.headers.authorization === undefined,
      // TRUST_PROXY is the operator's decision, checked at start-up; these checks would print to
      // the console, outside the structured log.
      validate: { trustProxy: false, xForwardedForHeader: false },
    }),
    basicAuth(options.password, options.logger),
    changesAllowed(options.readOnly),
    board.getRouter() as RequestHandler,
  );
  return router;
}

const digest = (value: string) => createHash('sha256').update(value).digest();

function basicAuth(password: string, logger: Logger): RequestHandler {
  // Hashing both sides gives equal lengths, so timingSafeEqual leaks neither length nor content.
  const expected = digest(`${ADMIN_USER}:${password}`);
  return (req, res, next) => {
    const credentials = basicCredentials(req);
    if (credentials !== undefined && timingSafeEqual(digest(credentials), expected)) {
      next();
      return;
    }
    const user = credentials?.slice(0, credentials.indexOf(':'));
    // A bare request is the first half of every browser login; a wrong password is news.
    logger[credentials === undefined ? 'debug' : 'warn'](
      {
        ip: req.ip,
        method: req.method,
        path: req.originalUrl.slice(0, 200),
        // The user name helps spot a misconfigured client; the password never appears.
        user: user === undefined ? undefined : JSON.stringify(user.slice(0, 64)),
        reason: credentials === undefined ? 'no credentials' : 'wrong credentials',
      },
      'dashboard login failed',
    );
    res.setHeader('WWW-Authenticate', REALM);
    res.status(401).json({ detail: 'dashboard credentials required' });
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

function changesAllowed(readOnly: boolean): RequestHandler {
  return (req, res, next) => {
    if (SAFE_METHODS.has(req.method)) {
      next();
      return;
    }
    if (readOnly) {
      res.status(403).json({ detail: 'the dashboard is read-only (ADMIN_READ_ONLY=true)' });
      return;
    }
    if (!sameOrigin(req)) {
      res.status(403).json({ detail: "changes are accepted only from the dashboard's own page" });
      return;
    }
    next();
  };
}

/** The browser's Origin names the host the request came to (scheme aside: TLS may end early). */
function sameOrigin(req: Request): boolean {
  const origin = req.headers.origin;
  const host = req.headers.host;
  if (origin === undefined || host === undefined) return false;
  if (
    req.headers['sec-fetch-site'] !== undefined &&
    req.headers['sec-fetch-site'] !== 'same-origin'
  )
    return false;
  try {
    return new URL(origin).host === host.toLowerCase();
  } catch {
    return false;
  }
}
