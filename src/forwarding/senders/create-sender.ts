import type { ResolvedDestination } from '../../config/resolve-destinations.js';
import { createAmqpSender } from './amqp-sender.js';
import { createHttpSender } from './http-sender.js';
import { createNatsSender } from './nats-sender.js';
import type { Sender } from './sender.js';

/** The sender for a destination, by its kind; `forwardSecret` signs what goes over HTTP. */
export function createSender(
  destination: ResolvedDestination,
  forwardSecret: string | undefined,
): Sender {
  const timeout = destination.timeoutMs;
  switch (destination.kind) {
    case 'http':
      // Checked at start (config.ts): an HTTP destination needs the secret.
      return createHttpSender(destination.url, forwardSecret ?? '', timeout);
    case 'nats':
      return createNatsSender(destination.url, destination.subject, timeout);
    case 'amqp':
      return createAmqpSender(
        destination.url,
        destination.exchange,
        destination.routingKey,
        timeout,
      );
  }
}
