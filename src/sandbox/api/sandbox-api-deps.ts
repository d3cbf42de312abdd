import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import type { AudioFiles } from '../audio/audio-files.js';
import type { DeliveryEngine } from '../delivery/delivery-engine.js';
import type { KeyStore } from './keys.js';
import type { createRateLimiter } from './rate-limit.js';
import type { createRequestLog } from './request-log.js';

/** What the sandbox's routes are given: its own file, so the routes and create-api.ts import it without a circle. */
export interface SandboxApiDeps {
  readonly keys: KeyStore;
  readonly admit: ReturnType<typeof createRateLimiter>;
  readonly requests: ReturnType<typeof createRequestLog>;
  readonly engine: DeliveryEngine;
  readonly audio: AudioFiles;
  readonly cdnOrigin: string;
  /** The CDN's 200 answers by path (cdn-server.ts). */
  readonly cdnHits: ReadonlyMap<string, number>;
  /** Trusts the CDN's own certificate, for voice conversion's fetch. */
  readonly cdnDispatcher: Dispatcher;
  readonly rateWindowMs: number;
  readonly logger: Logger;
}
