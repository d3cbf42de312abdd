import { pino, type DestinationStream, type Logger } from 'pino';
import pretty from 'pino-pretty';

/**
 * Paths never written to a log: the signature (a valid one replays within the tolerance window),
 * credentials in headers, and secrets anywhere in a logged object.
 */
export const REDACT_PATHS = [
  'req.headers["x-service-signature"]',
  'req.headers.authorization',
  'req.headers.cookie',
  'webhookSecrets',
  '*.webhookSecrets',
  'secret',
  '*.secret',
];

export type LogFormat = 'auto' | 'json' | 'pretty';

/**
 * LOG_FORMAT as it applies here: `auto` is readable lines for a person at a terminal and JSON
 * for everything else (a container's log collector, a pipe, the tests).
 */
export function resolveLogFormat(format: LogFormat, isTTY: boolean): 'json' | 'pretty' {
  return format === 'auto' ? (isTTY ? 'pretty' : 'json') : format;
}

export function createLogger(
  level: string,
  destination?: DestinationStream,
  format: LogFormat = 'json',
): Logger {
  const options = { level, redact: { paths: REDACT_PATHS, censor: '[redacted]' } };
  const out = destination ?? process.stdout;
  if (resolveLogFormat(format, (out as { isTTY?: boolean }).isTTY === true) === 'pretty') {
    // In-process and synchronous (no worker thread): the same ordering and exit behaviour as
    // JSON, and a crash's last lines are not lost.
    return pino(
      options,
      pretty({
        destination: out,
        sync: true,
        colorize: (out as { isTTY?: boolean }).isTTY === true,
        translateTime: 'SYS:HH:MM:ss.l',
        // One line per entry: a request's fields as indented YAML take a screen for a few
        // requests. A stack trace keeps its lines.
        singleLine: true,
        // A request reads as "request completed POST /webhooks 202 3 ms", then its other fields.
        messageFormat: requestMessage,
        ignore: 'pid,hostname,req.method,req.url,res,responseTime',
      }),
    );
  }
  return destination ? pino(options, destination) : pino(options);
}

/**
 * The message of a line, with a request's method, path, status and time after it (the fields
 * `ignore` then leaves out); other lines' messages as they are.
 */
function requestMessage(log: Record<string, unknown>, messageKey: string): string {
  const message = log[messageKey];
  const msg = typeof message === 'string' ? message : '';
  const req = log.req as { method?: unknown; url?: unknown } | undefined;
  const res = log.res as { statusCode?: unknown } | undefined;
  if (typeof req?.method !== 'string' || typeof res?.statusCode !== 'number') return msg;
  const ms = typeof log.responseTime === 'number' ? ` ${log.responseTime} ms` : '';
  return `${msg} ${req.method} ${String(req.url)} ${res.statusCode}${ms}`;
}
