import { once } from 'node:events';
import pino from 'pino';
import { Counter, Histogram, Registry } from 'prom-client';
import type { ResolvedDestination } from '../../src/forwarding/settings/resolve-destinations.js';
import { attemptDestination, type AttemptDeps } from '../../src/forwarding/attempt-destination.js';
import type { DestinationBoard } from '../../src/forwarding/destination-board.js';
import type { DestinationControl } from '../../src/forwarding/destination-control.js';
import type { Sender } from '../../src/forwarding/senders/sender.js';
import type { SlidingWindowLimiter } from '../../src/redis/sliding-window-limiter.js';

/** Resolves once `ms` have passed, by a timer of the test's own (the event it waits for). */
const passed = (ms: number) => once(AbortSignal.timeout(ms), 'abort');

it('a forward send leaves no timer behind: its signal is not aborted after the send ended', async () => {
  const seen: AbortSignal[] = [];
  const sender: Sender = {
    send: (_message, signal) => {
      seen.push(signal);
      return Promise.resolve();
    },
    close: () => Promise.resolve(),
  };
  const destination = {
    kind: 'http',
    url: new URL('http://127.0.0.1:1/'),
    name: 'd',
    attempts: 1,
    timeoutMs: 10,
  } satisfies ResolvedDestination;
  const registry = new Registry();
  const deps: AttemptDeps = {
    destinations: new Map([['d', destination]]),
    senders: new Map([['d', sender]]),
    // No state read yet, no rate: the send goes straight out, as for an active destination.
    board: { get: () => undefined, note: () => undefined } as unknown as DestinationBoard,
    control: {
      window: () => ({ log: 'l', pause: 'p', limit: 1, windowMs: 1000 }),
    } as unknown as DestinationControl,
    limiter: {} as SlidingWindowLimiter,
    latency: new Histogram({
      name: 'l',
      help: 'l',
      labelNames: ['destination'],
      registers: [registry],
    }),
    transitions: new Counter({
      name: 't',
      help: 't',
      labelNames: ['destination', 'to'],
      registers: [registry],
    }),
    logger: pino({ level: 'silent' }),
  };
  await expect(
    attemptDestination(
      'd',
      'job',
      {
        id: 'm',
        body: '{}',
        traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      },
      deps,
      5,
    ),
  ).resolves.toEqual({
    kind: 'sent',
  });
  // AbortSignal.timeout's timer fired here, 5 ms on, for a send long answered.
  await passed(40);
  expect(seen).toHaveLength(1);
  expect(seen[0]?.aborted).toBe(false);
});
