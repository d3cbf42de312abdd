import type { Logger } from 'pino';
import { Counter, Histogram, type Registry } from 'prom-client';
import { boundedJobCounts } from '../jobs/job-counts.js';
import { registerQueueGauges } from '../telemetry/metrics.js';
import { registerForwardGauges } from './forward-gauges.js';
import { boundedOldestPending, boundedOldestWaiting } from '../jobs/queue-readers.js';
import { registerOldestWaiting } from '../telemetry/queue-age.js';
import type { Config } from '../config/config.js';
import type { RedisConnection } from '../redis/connections.js';
import { startJobWorker } from '../jobs/start-job-worker.js';
import { isRefusal, type WriteGate } from '../redis/write-gate.js';
import { createAmqpSender } from './senders/amqp-sender.js';
import { resolveDestinations, type ResolvedDestination } from '../config/resolve-destinations.js';
import { createSlidingWindowLimiter } from '../redis/sliding-window-limiter.js';
import { DestinationBoard } from './destination-board.js';
import { destinationControl } from './destination-control.js';
import { announceDestinations } from './destination-roster.js';
import { createForwardQueue, FORWARD_QUEUE, type ForwardJobData } from './forward-queue.js';
import { forwardAtOnce } from './forward-at-once.js';
import type { ForwardMessage } from './forward-message.js';
import { createHttpSender } from './senders/http-sender.js';
import { createNatsSender } from './senders/nats-sender.js';
import type { Sender } from './senders/sender.js';
import { sendForward } from './send-forward.js';

export interface Forwarding {
  /**
   * Sends a handled delivery's message to every destination that wants it, at once where it can;
   * what did not take it goes on the forward queue (forward-at-once.ts).
   */
  forward(deliveryJobId: string, message: ForwardMessage): Promise<void>;
  close(): Promise<void>;
}

/** A destination down for long is tried every 10 minutes at the most. */
const MAX_DELAY_MS = 10 * 60 * 1000;
/**
 * Forward jobs a scrape looks at per state for each destination's oldest pending one: the 100
 * oldest waiting and the 100 delayed due first, with their messages (at most 200 × MAX_BODY_BYTES).
 */
const SCAN_PER_STATE = 100;
/** The name KEDA's second trigger (deploy/kubernetes) queries; a test keeps the two in step. */
export const FORWARD_BACKLOG_METRIC = 'webhook_forward_backlog';

/**
 * Forwarding, in a process that runs workers, when FORWARD_URLS names destinations: the delivery
 * worker's `forward`, which sends at once and puts what did not take the message on the forward
 * queue, and that queue's worker, which sends each job to every destination still pending
 * (FORWARD_ATTEMPTS per destination, backoff from FORWARD_BACKOFF_MS). The message was built when the delivery was handled and travels in the
 * job: a retry sends the same bytes and never downloads anything.
 */
export function startForwarding(
  config: Config,
  logger: Logger,
  redis: RedisConnection,
  {
    registries,
    reportError,
    gate,
  }: {
    /** Where its metrics are shown (the worker's, and the receiver's with ROLE=all). */
    readonly registries: readonly Registry[];
    /** The delivery worker's: a connection error is reported once, by state. */
    readonly reportError: (error: unknown, msg: string) => void;
    /** The process's: no forward is taken while Redis refuses writes. */
    readonly gate?: WriteGate | undefined;
  },
): Forwarding | undefined {
  const destinations = resolveDestinations(config);
  if (destinations.length === 0) return undefined;
  const names = destinations.map((d) => d.name);
  const senders = new Map(destinations.map((d) => [d.name, senderFor(d, config)]));
  const queue = createForwardQueue(redis, config.queuePrefix);
  queue.on('error', (error: unknown) => {
    reportError(error, 'forward queue error');
  });
  const control = destinationControl(redis, config.queuePrefix, names, {
    pauseAfter: config.forwardPauseAfter,
    probeMs: config.forwardProbeSeconds * 1000,
  });
  const board = new DestinationBoard(control, queue, logger, reportError);
  const forwards = new Counter({
    name: 'webhook_forwards_total',
    help: 'Forward attempts by destination (without credentials) and result: sent, retrying (failed, will be tried again) or failed (given up: its attempts run out, refused for good, or held past FORWARD_HOLD_SECONDS; listed by `failures`)',
    labelNames: ['destination', 'result'],
    registers: [...registries],
  });
  const latency = new Histogram({
    name: 'webhook_forward_send_seconds',
    help: 'Time of one send to the destination, from the request to its answer (or the error)',
    labelNames: ['destination'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [...registries],
  });
  const transitions = new Counter({
    name: 'webhook_forward_destination_transitions_total',
    help: 'Pauses (to="paused": FORWARD_PAUSE_AFTER failures in a row) and resumes (to="active": a probe succeeded) this process made; `forward pause|resume` are counted by the state gauge',
    labelNames: ['destination', 'to'],
    registers: [...registries],
  });
  registerQueueGauges(registries, boundedJobCounts(queue, redis), {
    jobs: 'webhook_forward_queue_jobs',
    queue: 'the forward queue (delayed: waiting to try a destination again)',
    backlog: FORWARD_BACKLOG_METRIC,
    // Delayed forwards wait for a destination to come back; more workers would not help them.
    backlogStates: ['waiting', 'prioritized'],
    backlogHelp: 'Forwards ready to send: waiting + prioritized (KEDA scales workers on this too)',
  });
  registerOldestWaiting(registries, FORWARD_QUEUE, boundedOldestWaiting(queue, redis));
  registerForwardGauges(
    registries,
    board,
    names,
    boundedOldestPending(queue, redis, (job) => job.data.destinations, SCAN_PER_STATE),
    2 * SCAN_PER_STATE,
  );
  const deps = {
    destinations: new Map(destinations.map((d) => [d.name, d])),
    senders,
    board,
    control,
    limiter: createSlidingWindowLimiter(redis),
    latency,
    transitions,
    logger,
    forwards,
    backoffMs: config.forwardBackoffMs,
    maxDelayMs: MAX_DELAY_MS,
    holdMs: config.forwardHoldSeconds * 1000,
  };
  board.start();
  // `forward status` and `pause` in a shell without FORWARD_URLS read the list from here.
  const roster = announceDestinations(redis, config.queuePrefix, destinations, reportError);
  const worker = startJobWorker<ForwardJobData>((job, token) => sendForward(job, token, deps), {
    queue: 'forwards',
    connection: redis,
    prefix: config.queuePrefix,
    concurrency: config.forwardConcurrency,
    lockMs: config.workerLockMs,
    // sendForward settles each destination's outcome itself (moveToDelayed, or failed for good);
    // this policy retries only a run that threw before it could (a Redis error).
    policy: {
      attempts: config.forwardAttempts,
      backoffMs: config.forwardBackoffMs,
      maxDelayMs: MAX_DELAY_MS,
    },
    logger,
    reportError,
    gate,
    holdsFor: isRefusal,
    label: 'forward',
    whenFailed: 'listed by `audio-webhooks failures`, sent again by `retry <jobId>`',
    describe: (job) => ({ destinations: job.data.destinations, messageId: job.data.messageId }),
  });
  logger.info({ destinations: names }, 'forwarding');
  return {
    forward: (deliveryJobId, message) =>
      forwardAtOnce(queue, destinations, deliveryJobId, message, deps),
    async close() {
      await Promise.all([board.close(), roster.close()]);
      await worker.close(redis.status !== 'ready');
      await queue.close();
      await Promise.all([...senders.values()].map((sender) => sender.close()));
    },
  };
}

function senderFor(destination: ResolvedDestination, config: Config): Sender {
  const timeout = destination.timeoutMs;
  switch (destination.kind) {
    case 'http':
      // Checked at start (config.ts): an HTTP destination needs the secret.
      return createHttpSender(destination.url, config.forwardSecret ?? '', timeout);
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
