import { Worker } from 'bullmq';
import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import { boundedJobCounts } from '../queue/job-counts.js';
import { registerQueueGauges } from '../telemetry/metrics.js';
import type { Config } from '../config/config.js';
import type { RedisConnection } from '../redis/connections.js';
import { backoffStrategy } from '../workers/retry-policy.js';
import { createAmqpSender } from './amqp-sender.js';
import type { Destination } from './destinations.js';
import {
  createForwardQueue,
  enqueueForwards,
  FORWARD_QUEUE,
  type ForwardJobData,
} from './forward-queue.js';
import type { ForwardMessage } from './forward-message.js';
import { createHttpSender } from './http-sender.js';
import { createNatsSender } from './nats-sender.js';
import type { Sender } from './sender.js';
import { sendForward } from './send-forward.js';

export interface Forwarding {
  /** Puts a handled delivery's message on the forward queue, one job per destination. */
  forward(deliveryJobId: string, message: ForwardMessage): Promise<void>;
  close(): Promise<void>;
}

/** Sent forwards are kept an hour (a delivery job run again adds none meanwhile); failed, for `failures`. */
const KEEP_COMPLETED = { age: 3600, count: 10_000 } as const;
const KEEP_FAILED = { count: 10_000 } as const;
/** A destination down for long is tried every 10 minutes at the most. */
const MAX_DELAY_MS = 10 * 60 * 1000;
/** The name KEDA's second trigger (deploy/kubernetes) queries; a test keeps the two in step. */
export const FORWARD_BACKLOG_METRIC = 'webhook_forward_backlog';

/**
 * Forwarding, in a process that runs workers, when FORWARD_URLS names destinations: the forward
 * queue's producer (the delivery worker calls `forward`) and its worker, which sends each job to
 * its one destination and leaves retries to BullMQ (FORWARD_ATTEMPTS, backoff from
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
  const worker = new Worker<ForwardJobData>(
    FORWARD_QUEUE,
    (job) =>
      sendForward(job, {
        senders,
        forwards,
        timeoutMs: config.forwardTimeoutMs,
        attempts: config.forwardAttempts,
      }),
    {
      connection: redis,
      prefix: config.queuePrefix,
      concurrency: config.forwardConcurrency,
      removeOnComplete: KEEP_COMPLETED,
      removeOnFail: KEEP_FAILED,
      settings: {
        backoffStrategy: backoffStrategy({
          attempts: config.forwardAttempts,
          backoffMs: config.forwardBackoffMs,
          maxDelayMs: MAX_DELAY_MS,
        }),
      },
    },
  );
  worker.on('failed', (job, error) => {
    if (job === undefined) return;
    const final = Boolean(job.finishedOn);
    logger[final ? 'error' : 'warn'](
      {
        jobId: job.id,
        destinations: job.data.destinations,
        messageId: job.data.messageId,
        attemptsMade: job.attemptsMade,
        reason: error.message,
      },
      final
        ? 'forward failed; listed by `audio-webhooks failures`, sent again by `retry <jobId>`'
        : 'forward failed; will retry',
    );
  });
  worker.on('error', (error) => {
    reportError(error, 'forward worker error');
  });
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
