import { readFile } from 'node:fs/promises';
import type { RedisConnection } from '../redis/connections.js';
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import type { Config } from '../config/config.js';
import { createGuardedAgent } from '../download/guarded-agent.js';
import { createFailureLog } from '../records/failure-log.js';
import { createRevocationRegistry } from '../records/revocation-registry.js';
import type { AudioMetadata, AudioStore } from '../storage/audio-store.js';
import { withDeadline } from '../util/deadline.js';
import { createAudioStore, STORE_CHECK_DEADLINE_MS } from '../storage/create-audio-store.js';
import { NO_CUSTOM_EVENTS, type CustomEvents } from '../hooks/custom-events.js';
import { createAudioDownloader } from './download-audio.js';
import { type DeliveryInfo } from '../hooks/hook-context.js';
import { withDefaults, type Hooks } from '../hooks/hooks.js';
import { readOnly, type HookContext } from '../hooks/hook-context.js';
import type { DownloadMetrics, StoreWriteMetrics } from './worker-metrics.js';

/** What the handlers share in one worker process; `forDelivery` gives each job its context. */
export interface WorkerContext {
  readonly store: AudioStore;
  /** The SSRF-guarded undici Agent every download goes through. */
  readonly dispatcher: Dispatcher & { close(): Promise<void> };
  readonly hooks: Hooks;
  readonly customEvents: CustomEvents;
  /** The context a job's handler, hooks or custom `handle` get; `outcome` records what it stored. */
  forDelivery(delivery: DeliveryInfo, outcome: StoredOutcome): HookContext;
}

/** Where one delivery's handling records the item its downloads stored (dispatch reads it). */
export interface StoredOutcome {
  stored: AudioMetadata | undefined;
}

const SECOND = 1000;

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

/** Builds the handlers' context: store, guarded downloader, records, hooks. */
export async function createWorkerContext(
  config: Config,
  logger: Logger,
  redis: RedisConnection,
  options: ContextOptions,
): Promise<WorkerContext> {
  const store = options.store ?? (await createAudioStore(config));
  // Bounded like the store's check: the same volume, listed before the first job.
  const removed = await withDeadline(
    store.removeStaleTemps(),
    STORE_CHECK_DEADLINE_MS,
    "the start-up sweep of the store's partial downloads",
  );
  if (removed.length > 0)
    logger.warn({ removed }, 'removed partial downloads left by a killed process');
  const ca = [
    ...(config.downloadCaFile === undefined ? [] : [await readCaFile(config.downloadCaFile)]),
    ...(options.ca === undefined ? [] : [options.ca]),
  ];
  const timeout = config.downloadTimeoutMs;
  const dispatcher = createGuardedAgent({
    allowPrivateIps: config.downloadAllowPrivateIps,
    ...(ca.length === 0 ? {} : { ca }),
    connectTimeoutMs: Math.min(10 * SECOND, timeout),
    headersTimeoutMs: Math.min(30 * SECOND, timeout),
    bodyIdleTimeoutMs: Math.min(30 * SECOND, timeout),
  });
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
    forDelivery(delivery, outcome) {
      const jobLogger = logger.child({
        jobId: delivery.jobId,
        event: delivery.event,
        id: delivery.id,
        ...(delivery.replay ? { replay: true } : {}),
      });
      return {
        logger: jobLogger,
        store: readable,
        revocations,
        failures,
        delivery,
        downloadAudio: async (url, downloadOptions) => {
          const stored = await download(url, downloadOptions, delivery, jobLogger);
          outcome.stored = stored;
          return stored;
        },
      };
    },
  };
}

/**
 * The store, its writes of audio (`write`, `writeWithMetadata`) counted and timed. A Proxy, not a
 * copy: a fork's store may be a class whose methods need their own `this`, and what AudioStore
 * gains later passes through untouched.
 */
function measureWrites(store: AudioStore, metrics: StoreWriteMetrics): AudioStore {
  const measured =
    <Args extends unknown[]>(write: (...args: Args) => Promise<void>) =>
    async (...args: Args) => {
      const end = metrics.storeWriteSeconds.startTimer();
      try {
        await write(...args);
        metrics.storeWrites.inc({ result: 'ok' });
      } catch (error: unknown) {
        metrics.storeWrites.inc({ result: 'failed' });
        throw error;
      } finally {
        end();
      }
    };
  const write = measured(store.write.bind(store));
  const withMetadata = store.writeWithMetadata && measured(store.writeWithMetadata.bind(store));
  return new Proxy(store, {
    get(target, key) {
      if (key === 'write') return write;
      if (key === 'writeWithMetadata') return withMetadata;
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function'
        ? (value as (...args: unknown[]) => unknown).bind(target)
        : value;
    },
  });
}

/** A startup error that names the setting, not a stack trace. */
export class CaFileError extends Error {
  override name = 'CaFileError';
}

/** A CA file is a few kB on a local disk; one that takes this long is a FIFO or a hung mount. */
const CA_FILE_DEADLINE_MS = 5_000;

async function readCaFile(path: string): Promise<string> {
  const read = withDeadline(readFile(path, 'utf8'), CA_FILE_DEADLINE_MS, 'reading it');
  const pem = await read.catch((error: unknown) => {
    throw new CaFileError(`DOWNLOAD_CA_FILE ${path} cannot be read: ${String(error)}`);
  });
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) {
    throw new CaFileError(`DOWNLOAD_CA_FILE ${path} holds no PEM certificate`);
  }
  return pem;
}
