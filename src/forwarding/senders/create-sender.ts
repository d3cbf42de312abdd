import type { ResolvedDestination } from '../settings/resolve-destinations.js';
import { createAmqpSender } from './amqp-sender.js';
import type { ForwardSigner } from './forward-signer.js';
import { createHttpSender } from './http-sender.js';
import { createNatsSender } from './nats-sender.js';
import type { Sender } from './sender.js';

/** The sender for a destination, by its kind; `sign` signs what goes over HTTP. */
export function createSender(destination: ResolvedDestination, sign: ForwardSigner): Sender {
  const timeout = destination.timeoutMs;
  switch (destination.kind) {
    case 'http':
      return createHttpSender(destination.url, sign, timeout);
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
