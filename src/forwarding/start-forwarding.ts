import type { Registry } from 'prom-client';
import type { Logger } from 'pino';
import type { ForwardSettings } from './settings/forward-settings.js';
import type { ProcessSettings } from '../config/process-settings.js';
import type { RedisSettings } from '../config/redis-settings.js';
import type { RedisConnection } from '../redis/connections.js';
import { startJobWorker } from '../jobs/start-job-worker.js';
import { isRefusal } from '../redis/redis-memory.js';
import type { WriteGate } from '../redis/write-gate.js';
import { resolveDestinations } from './settings/resolve-destinations.js';
import { createSlidingWindowLimiter } from '../redis/sliding-window-limiter.js';
import { DestinationBoard } from './destination-board.js';
import { destinationControl } from './destination-control.js';
import { announceDestinations } from './destination-roster.js';
import { createForwardQueue, type ForwardJobData } from './forward-queue.js';
import { createForwardMetrics, registerForwardQueueGauges } from './forward-metrics.js';
import { createSender } from './senders/create-sender.js';
import { createForwardSigner } from './senders/forward-signer.js';
import { forwardAtOnce } from './forward-at-once.js';
import type { ForwardMessage } from './forward-message.js';
import { sendForward } from './send-forward.js';
import type { DeliveryTimeline } from '../history/delivery-timeline.js';

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
 * The settings forwarding reads: every FORWARD_* one, the prefix its queue and the timelines live
 * under, and the job lock its worker shares with the delivery worker.
 */
export type ForwardingConfig = ForwardSettings &
  Pick<RedisSettings, 'queuePrefix'> &
  Pick<ProcessSettings, 'workerLockMs'>;

/**
 * Forwarding, in a process that runs workers, when FORWARD_URLS names destinations: the delivery
 * worker's `forward`, which sends at once and puts what did not take the message on the forward
 * queue, and that queue's worker, which sends each job to every destination still pending
 * (FORWARD_ATTEMPTS per destination, backoff from FORWARD_BACKOFF_MS). The message was built when the delivery was handled and travels in the
 * job: a retry sends the same bytes and never downloads anything.
 */
export function startForwarding(
  config: ForwardingConfig,
  logger: Logger,
  redis: RedisConnection,
  {
    registries,
    reportError,
    gate,
    timeline,
  }: {
    /** Where its metrics are shown (the worker's, and the receiver's with ROLE=all). */
    readonly registries: readonly Registry[];
    /** The delivery worker's: a connection error is reported once, by state. */
    readonly reportError: (error: unknown, msg: string) => void;
    /** The process's: no forward is taken while Redis refuses writes. */
    readonly gate?: WriteGate | undefined;
    /** Where each destination's part in a delivery is noted, for the inspector. */
    readonly timeline?: DeliveryTimeline | undefined;
  },
): Forwarding | undefined {
  const destinations = resolveDestinations(config);
  if (destinations.length === 0) return undefined;
  const names = destinations.map((d) => d.name);
  // Checked at start (config.ts): with an HTTP destination, at least one key is set.
  const sign = createForwardSigner({
    secret: config.forwardSecret,
    signingKeys: config.forwardSigningKeys,
  });
  const senders = new Map(destinations.map((d) => [d.name, createSender(d, sign)]));
  const queue = createForwardQueue(redis, config.queuePrefix);
  queue.on('error', (error: unknown) => {
    reportError(error, 'forward queue error');
  });
  const control = destinationControl(redis, config.queuePrefix, names, {
    pauseAfter: config.forwardPauseAfter,
    probeMs: config.forwardProbeSeconds * 1000,
  });
  const board = new DestinationBoard(control, queue, logger, reportError);
  const { forwards, latency, transitions } = createForwardMetrics(registries);
  registerForwardQueueGauges(registries, queue, redis, board, names);
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
    timeline,
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
