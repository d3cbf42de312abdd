import { readFile } from 'node:fs/promises';
import type { RedisConnection } from '../redis/connections.js';
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import type { Config } from '../config.js';
import { createGuardedAgent } from '../download/guarded-agent.js';
import { createFailureLog } from '../records/failure-log.js';
import { createRevocationRegistry } from '../records/revocation-registry.js';
import type { AudioStore } from '../storage/audio-store.js';
import { createLocalAudioStore } from '../storage/local-audio-store.js';
import type { HookContext, Hooks } from './hooks.js';

/** Everything a handler may use; built once per worker process. */
export interface WorkerContext extends HookContext {
  /** The SSRF-guarded undici Agent every download goes through. */
  readonly dispatcher: Dispatcher & { close(): Promise<void> };
  readonly hooks: Hooks;
}

/** The job being handled. */
export interface JobInfo {
  readonly id: string;
  /** When the receiver accepted the delivery, ISO 8601. */
  readonly receivedAt: string;
}

const SECOND = 1000;

export interface ContextOptions {
  readonly hooks: Hooks;
  /** Defaults to the local filesystem under AUDIO_DIR (checked writable here). */
  readonly store?: AudioStore | undefined;
  /** Extra CA certificates (PEM) on top of DOWNLOAD_CA_FILE's. */
  readonly ca?: string | undefined;
}

/** Builds the handlers' context: store, guarded downloader, records, hooks. */
export async function createWorkerContext(
  config: Config,
  logger: Logger,
  redis: RedisConnection,
  options: ContextOptions,
): Promise<WorkerContext> {
  const store = options.store ?? (await createLocalAudioStore(config.audioDir));
  const removed = await store.removeStaleTemps();
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
  return {
    config,
    logger,
    store,
    dispatcher,
    revocations: createRevocationRegistry(redis, config.queuePrefix),
    failures: createFailureLog(redis, config.queuePrefix),
    hooks: options.hooks,
  };
}

/** A startup error that names the setting, not a stack trace. */
export class CaFileError extends Error {
  override name = 'CaFileError';
}

async function readCaFile(path: string): Promise<string> {
  const pem = await readFile(path, 'utf8').catch((error: unknown) => {
    throw new CaFileError(`DOWNLOAD_CA_FILE ${path} cannot be read: ${String(error)}`);
  });
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) {
    throw new CaFileError(`DOWNLOAD_CA_FILE ${path} holds no PEM certificate`);
  }
  return pem;
}
