import { NeverRetryError } from '../jobs/retry-policy.js';
import { inSpan } from '../telemetry/tracing.js';
import type { Delivery } from '../provider-spec/delivery.js';
import { isKnownEvent, webhookEventSchema, type WebhookEvent } from '../provider-spec/events.js';
import { handleAudioFailed } from './handlers/audio-failed.js';
import { handleAudioReady } from './handlers/audio-ready.js';
import { handleKeyRevoked } from './handlers/key-revoked.js';
import type { RedisConnection } from '../redis/connections.js';
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import type { RedisSettings } from '../config/redis-settings.js';
import { createDownloadAgent, type DownloadAgentConfig } from '../download/download-agent.js';
import { createFailureLog } from '../history/failure-log.js';
import { createRevocationRegistry } from '../history/revocation-registry.js';
import type { AudioMetadata, AudioStore } from '../storage/audio-store.js';
import { startStore, type StoreSettings } from '../storage/create-audio-store.js';
import { NO_CUSTOM_EVENTS, type CustomEvents } from '../hooks/custom-events.js';
import { createAudioDownloader, type AudioDownloaderDeps } from './download-audio.js';
import { withDefaults, type Hooks } from '../hooks/hooks.js';
import { readOnly, type DeliveryInfo, type HookContext } from '../hooks/hook-context.js';
import { measureWrites, type DownloadMetrics, type StoreWriteMetrics } from './worker-metrics.js';

// A delivery's handling: the worker's context, built once per process (createWorkerContext, at
// the end), and for each job its delivery's view (deliveryView), its handling context
// (forDelivery) and its handler, chosen by event (dispatch).

/**
 * A job's delivery and the facts of the job itself: the delivery's one view, built once
 * (deliveryView) and read by every stage; hooks and handlers get it as their DeliveryInfo.
 */
export type DeliveryJob = DeliveryInfo & { readonly delivery: Delivery };

/** The facts of a job that its delivery's view is built from (run-delivery.ts reads them). */
export type JobFacts = Omit<DeliveryInfo, 'event' | 'id' | 'dataText'> & {
  readonly dataText: string | undefined;
};

/**
 * The delivery's view. Jobs normally come from our receiver, but a queue is an open door: one
 * whose `data.id` is not a string can never be handled, and fails at once instead of retrying.
 */
export function deliveryView(delivery: Delivery, facts: JobFacts): DeliveryJob {
  const id: unknown = (delivery as { readonly data?: { readonly id?: unknown } }).data?.id;
  if (typeof id !== 'string') throw invalid(delivery.event, 'data.id is not a string');
  const { dataText, ...rest } = facts;
  return {
    delivery,
    event: delivery.event,
    id,
    ...rest,
    ...(dataText === undefined ? {} : { dataText }),
  };
}

/** What a handled delivery gave: its handler's result, and the item it stored (the last, if several). */
export interface Handled {
  readonly result: unknown;
  /** The stored item's metadata, for forwarding's `stored`; undefined when it stored none. */
  readonly stored: AudioMetadata | undefined;
}

/**
 * Runs one job: a built-in event by its handler, a custom one by its `handle`, each checking
 * the delivery against its schema again (a queue is an open door): one that can never be
 * handled fails at once instead of being retried.
 */
export async function dispatch(job: DeliveryJob, context: WorkerContext): Promise<Handled> {
  const { delivery, ...info } = job;
  const handling = context.forDelivery(info);
  const result = await run(delivery, handling.context, context);
  return { result, stored: handling.stored() };
}

function run(delivery: Delivery, hookContext: HookContext, context: WorkerContext) {
  // The handler's own span: BullMQ's `process` span around it also holds its Redis calls.
  return inSpan('webhook.handle', { 'webhook.event': delivery.event }, async () => {
    if (isKnownEvent(delivery.event)) {
      const parsed = webhookEventSchema.safeParse(delivery);
      if (!parsed.success) throw invalid(delivery.event, parsed.error.message);
      return handleBuiltIn(parsed.data, hookContext, context.hooks);
    }
    const custom = context.customEvents.get(delivery.event);
    if (custom === undefined) {
      throw new NeverRetryError(
        `no handler for event ${JSON.stringify(delivery.event)} in this worker (is its src/custom/events.ts the receiver's?)`,
      );
    }
    const parsed = custom.data.safeParse(delivery.data);
    if (!parsed.success) throw invalid(delivery.event, parsed.error.message);
    return custom.handle({ event: delivery.event, data: parsed.data }, hookContext);
  });
}

function invalid(event: string, problems: string): NeverRetryError {
  return new NeverRetryError(`job data is not a valid ${event} delivery: ${problems}`);
}

/**
 * One handler per built-in event. The switch is exhaustive: add an event to
 * `webhookEventSchema` and this file stops compiling until the new case is handled.
 */
function handleBuiltIn(event: WebhookEvent, context: HookContext, hooks: Hooks): Promise<unknown> {
  switch (event.event) {
    case 'audio.ready':
      return handleAudioReady(event, context, hooks);
    case 'audio.failed':
      return handleAudioFailed(event, context, hooks);
    case 'key.revoked':
      return handleKeyRevoked(event, context, hooks);
    default:
      return assertNever(event);
  }
}

function assertNever(event: never): never {
  throw new Error(`no handler for event ${JSON.stringify(event)}`);
}

/** What the handlers share in one worker process; `forDelivery` gives each job its context. */
export interface WorkerContext {
  readonly store: AudioStore;
  /** The SSRF-guarded undici Agent every download goes through. */
  readonly dispatcher: Dispatcher & { close(): Promise<void> };
  readonly hooks: Hooks;
  readonly customEvents: CustomEvents;
  /** The context a job's handler, hooks or custom `handle` get, and what its downloads stored. */
  forDelivery(delivery: DeliveryInfo): DeliveryHandling;
}

/** One delivery's handling: its context, and the item its downloads stored (the last, if several). */
export interface DeliveryHandling {
  readonly context: HookContext;
  stored(): AudioMetadata | undefined;
}

export interface ContextOptions {
  /**
   * Your hooks (main.ts passes src/custom/hooks.ts); missing ones do nothing.
   * @defaultValue none
   */
  readonly hooks?: Partial<Hooks> | undefined;
  /** @defaultValue none */
  readonly customEvents?: CustomEvents;
  /** @defaultValue the store AUDIO_STORE chooses, checked at start (storage/create-audio-store.ts) */
  readonly store?: AudioStore | undefined;
  /** Extra CA certificates (PEM) on top of DOWNLOAD_CA_FILE's. @defaultValue none */
  readonly ca?: string | undefined;
  /** Where downloads and the store's writes are counted (telemetry/). @defaultValue none */
  readonly metrics?: (DownloadMetrics & StoreWriteMetrics) | undefined;
}

/** What the context is built from: the store's settings, the downloads', and the prefix of the failure log and the revocation registry. */
export type ContextSettings = StoreSettings &
  DownloadAgentConfig &
  AudioDownloaderDeps['config'] &
  Pick<RedisSettings, 'queuePrefix'>;

/**
 * Builds the handlers' context: the store (started: storage/create-audio-store.ts), the guarded
 * downloader (download/download-agent.ts), the failure log and the revocation registry, hooks.
 */
export async function createWorkerContext(
  config: ContextSettings,
  logger: Logger,
  redis: RedisConnection,
  options: ContextOptions,
): Promise<WorkerContext> {
  const store = await startStore(config, logger, options.store);
  const dispatcher = await createDownloadAgent(config, options.ca);
  const { metrics } = options;
  const download = createAudioDownloader({
    config,
    // The downloader is the store's one writer of audio: its bytes are counted here, whatever the store.
    store: metrics === undefined ? store : measureWrites(store, metrics),
    dispatcher,
    ...(metrics === undefined ? {} : { metrics }),
  });
  const readable = readOnly(store);
  const revocations = createRevocationRegistry(redis, config.queuePrefix);
  const failures = createFailureLog(redis, config.queuePrefix);
  return {
    store,
    dispatcher,
    hooks: withDefaults(options.hooks),
    customEvents: options.customEvents ?? NO_CUSTOM_EVENTS,
    forDelivery(delivery) {
      const jobLogger = logger.child({
        jobId: delivery.jobId,
        event: delivery.event,
        id: delivery.id,
        ...(delivery.replay ? { replay: true } : {}),
      });
      let last: AudioMetadata | undefined;
      const context: HookContext = {
        logger: jobLogger,
        store: readable,
        revocations,
        failures,
        delivery,
        downloadAudio: async (url, downloadOptions) => {
          last = await download(url, downloadOptions, delivery, jobLogger);
          return last;
        },
      };
      return { context, stored: () => last };
    },
  };
}
