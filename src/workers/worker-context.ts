import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import type { Config } from '../config.js';
import type { FailureLog } from '../records/failure-log.js';
import type { RevocationRegistry } from '../records/revocation-registry.js';
import type { AudioStore } from '../storage/audio-store.js';
import type { Hooks } from './hooks.js';

/** Everything a handler may use; built once per worker process in start-workers.ts. */
export interface WorkerContext {
  readonly config: Config;
  readonly logger: Logger;
  readonly store: AudioStore;
  /** The SSRF-guarded undici Agent every download goes through. */
  readonly dispatcher: Dispatcher;
  readonly revocations: RevocationRegistry;
  readonly failures: FailureLog;
  readonly hooks: Hooks;
}

/** The job being handled. */
export interface JobInfo {
  readonly id: string;
  /** When the receiver accepted the delivery, ISO 8601. */
  readonly receivedAt: string;
}
