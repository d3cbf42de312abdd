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
        ignore: 'pid,hostname',
      }),
    );
  }
  return destination ? pino(options, destination) : pino(options);
}
