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
import { type DeliveryInfo } from '../hooks/hook-context.js';
import { withDefaults, type Hooks } from '../hooks/hooks.js';
import { readOnly, type HookContext } from '../hooks/hook-context.js';
import { measureWrites, type DownloadMetrics, type StoreWriteMetrics } from './worker-metrics.js';

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

/** What the context is built from: the store's settings, the downloads', and the records' prefix. */
export type ContextSettings = StoreSettings &
  DownloadAgentConfig &
  AudioDownloaderDeps['config'] &
  Pick<RedisSettings, 'queuePrefix'>;

/**
 * Builds the handlers' context: the store (started: storage/create-audio-store.ts), the guarded
 * downloader (download/download-agent.ts), records, hooks.
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
    // The downloader is the store's one writer of audio: measured here, whatever the store.
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
