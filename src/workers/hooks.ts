import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { RevocationRegistry } from '../records/revocation-registry.js';
import type { AudioMetadata } from '../storage/audio-store.js';
import type { AudioFailedEvent, AudioReadyEvent, KeyRevokedEvent } from '../webhooks/events.js';

export interface HookContext {
  readonly config: Config;
  readonly logger: Logger;
  readonly revocations: RevocationRegistry;
}

/**
 * YOUR CODE GOES HERE. Each hook runs in a worker after the built-in handling of its event has
 * succeeded (the audio is on disk, the failure or revocation is recorded). A hook that throws
 * fails the job, which is retried with backoff and kept in `failed` for replay, so hooks must be
 * idempotent: the same event can reach them more than once.
 */
export interface Hooks {
  audioReady(event: AudioReadyEvent, audio: AudioMetadata, context: HookContext): Promise<void>;
  audioFailed(event: AudioFailedEvent, context: HookContext): Promise<void>;
  keyRevoked(event: KeyRevokedEvent, context: HookContext): Promise<void>;
}

/** The hooks as shipped: nothing beyond the built-in handling, which already logs each event. */
export const defaultHooks: Hooks = {
  async audioReady() {
    // e.g. transcode the file, upload it to your bucket, mark the batch item done in your database.
  },
  async audioFailed() {
    // e.g. resubmit the job, tell the user who asked for it.
  },
  async keyRevoked() {
    // e.g. switch to a fresh API key from your secret store, page whoever owns the integration.
  },
};
