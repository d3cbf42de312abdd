import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import { boundedJobCounts } from '../jobs/job-counts.js';
import { registerQueueGauges } from '../telemetry/metrics.js';
import { registerForwardGauges } from '../telemetry/forward-gauges.js';
import { boundedOldestPending, boundedOldestWaiting } from '../jobs/queue-readers.js';
import { registerOldestWaiting } from '../telemetry/queue-age.js';
import type { Config } from '../config/config.js';
import type { RedisConnection } from '../redis/connections.js';
import { startJobWorker } from '../jobs/start-job-worker.js';
import { createAmqpSender } from './amqp-sender.js';
import type { Destination } from '../config/destinations.js';
import { createForwardQueue, FORWARD_QUEUE, type ForwardJobData } from '../queue/forward-queue.js';
import { enqueueForwards } from './enqueue-forwards.js';
import type { ForwardMessage } from './forward-message.js';
import { createHttpSender } from './http-sender.js';
import { createNatsSender } from './nats-sender.js';
import type { Sender } from './sender.js';
import { sendForward } from './send-forward.js';

export interface Forwarding {
  /** Puts a handled delivery's message on the forward queue: one job, for every destination. */
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
 * Forwarding, in a process that runs workers, when FORWARD_URLS names destinations: the forward
 * queue's producer (the delivery worker calls `forward`) and its worker, which sends each job to
 * every destination still pending and leaves retries to BullMQ (FORWARD_ATTEMPTS, backoff from
 * FORWARD_BACKOFF_MS). The message was built when the delivery was handled and travels in the
 * job: a retry sends the same bytes and never downloads anything.
 */
export function startForwarding(
  config: Config,
  logger: Logger,
  redis: RedisConnection,
  {
    registries,
    reportError,
  }: {
    /** Where its metrics are shown (the worker's, and the receiver's with ROLE=all). */
    readonly registries: readonly Registry[];
    /** The delivery worker's: a connection error is reported once, by state. */
    readonly reportError: (error: unknown, msg: string) => void;
  },
): Forwarding | undefined {
  const destinations = config.forwardDestinations;
  if (destinations.length === 0) return undefined;
  const senders = new Map(destinations.map((d) => [d.name, senderFor(d, config)]));
  const queue = createForwardQueue(redis, config.queuePrefix);
  queue.on('error', (error: unknown) => {
    reportError(error, 'forward queue error');
  });
  const forwards = new Counter({
    name: 'webhook_forwards_total',
    help: 'Forward attempts by destination (without credentials) and result: sent, retrying (failed, will be tried again) or failed (past FORWARD_ATTEMPTS, listed by `failures`)',
    labelNames: ['destination', 'result'],
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
    destinations.map((d) => d.name),
    boundedOldestPending(queue, redis, (job) => job.data.destinations, SCAN_PER_STATE),
    2 * SCAN_PER_STATE,
  );
  const worker = startJobWorker<ForwardJobData>(
    (job) =>
      sendForward(job, {
        senders,
        forwards,
        timeoutMs: config.forwardTimeoutMs,
        attempts: config.forwardAttempts,
      }),
    {
      queue: 'forwards',
      connection: redis,
      prefix: config.queuePrefix,
      concurrency: config.forwardConcurrency,
      policy: {
        attempts: config.forwardAttempts,
        backoffMs: config.forwardBackoffMs,
        maxDelayMs: MAX_DELAY_MS,
      },
      logger,
      reportError,
      label: 'forward',
      whenFailed: 'listed by `audio-webhooks failures`, sent again by `retry <jobId>`',
      describe: (job) => ({ destinations: job.data.destinations, messageId: job.data.messageId }),
    },
  );
  logger.info({ destinations: destinations.map((d) => d.name) }, 'forwarding');
  return {
    forward: (deliveryJobId, message) =>
      enqueueForwards(queue, destinations, deliveryJobId, message),
    async close() {
      await worker.close(redis.status !== 'ready');
      await queue.close();
      await Promise.all([...senders.values()].map((sender) => sender.close()));
    },
  };
}

function senderFor(destination: Destination, config: Config): Sender {
  const timeout = config.forwardTimeoutMs;
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
