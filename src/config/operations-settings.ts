import { z } from 'zod';
import { bool, hostNames, int, trustProxy } from './parsers.js';
import type { ParsedSettings, SettingSpec } from './setting-spec.js';

/**
 * ADMIN_PASSWORD's characters at least where HOST lets others reach the dashboard: a password
 * that long, random, is beyond 10 guesses per 15 minutes from any number of addresses.
 */
export const MIN_ADMIN_PASSWORD_CHARS = 16;

/** What operators read and reach: logs, the proxy in front, the queue dashboard, a worker's liveness. */
export const OPERATIONS_SETTINGS = {
  LOG_LEVEL: {
    schema: z.enum(
      ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
      'must be one of fatal, error, warn, info, debug, trace, silent',
    ),
    default: 'info',
    readBy: ['web', 'worker'],
    doc: 'pino level',
  },
  LOG_FORMAT: {
    schema: z.enum(['auto', 'json', 'pretty'], 'must be auto, json or pretty'),
    default: 'auto',
    readBy: ['web', 'worker'],
    doc: '`json` (one object a line, for log collectors), `pretty` (readable lines, pino-pretty) or `auto`: pretty when standard output is a terminal, else JSON',
  },
  TRUST_PROXY: {
    schema: trustProxy,
    default: 'loopback',
    readBy: ['web'],
    doc: 'Express `trust proxy` setting for the load balancer in front',
  },
  ADMIN_PASSWORD: {
    schema: z.string().optional(),
    readBy: ['web'],
    doc: 'serves the queue dashboard at /admin/queues and the delivery inspector (Basic auth, user `admin`); unset: neither. On a HOST other than loopback it must be 16 characters or more, and with a TRUST_PROXY other than `loopback` it needs INTERNAL_PORT, else start-up is refused',
  },
  ADMIN_HOSTS: {
    schema: hostNames,
    readBy: ['web'],
    doc: 'comma-separated host names (no port) the dashboard, the inspector and INTERNAL_PORT may be reached by, besides IP literals and `localhost`; a request with any other `Host` gets 421 (a DNS-rebinding page gets nothing)',
  },
  ADMIN_READ_ONLY: {
    schema: bool,
    default: 'true',
    readBy: ['web'],
    doc: 'the dashboard shows but changes nothing; `false` enables retry, remove, clean',
  },
  WORKER_HEALTH_PORT: {
    schema: int(1, 65535).optional(),
    readBy: ['worker'],
    doc: '/healthz (liveness: notices a wedged worker) and /metrics of a process running workers; unset: none',
  },
  WORKER_STALL_MS: {
    schema: int(1000),
    default: '300000',
    readBy: ['worker'],
    doc: 'a worker that holds jobs but settles none this long (or idles while jobs wait) is wedged',
  },
} as const satisfies Record<string, SettingSpec>;

/** The operations settings, as parsed: logs, the proxy, the dashboard, a worker's liveness. */
export type OperationsSettings = ParsedSettings<typeof OPERATIONS_SETTINGS>;
