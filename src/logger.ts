import { pino, type DestinationStream, type Logger } from 'pino';

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

export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options = { level, redact: { paths: REDACT_PATHS, censor: '[redacted]' } };
  return destination ? pino(options, destination) : pino(options);
}
