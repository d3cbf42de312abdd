import type { Logger } from 'pino';
import type { FailureLog } from '../records/failure-log.js';
import type { RevocationRegistry } from '../records/revocation-registry.js';
import type { AudioMetadata, AudioStore } from '../storage/audio-store.js';

/** What a hook may do with the store: read. */
export type ReadOnlyAudioStore = Pick<AudioStore, 'read' | 'readMetadata' | 'holds'>;

/** A view of `store` with its reading methods alone (a cast would leave the rest reachable). */
export function readOnly(store: AudioStore): ReadOnlyAudioStore {
  return {
    read: (name) => store.read(name),
    readMetadata: (stem) => store.readMetadata(stem),
    holds: (name, bytes, sha256) => store.holds(name, bytes, sha256),
  };
}
import type { AudioFailedEvent, AudioReadyEvent, KeyRevokedEvent } from '../webhooks/events.js';
import type { DeliveryInfo, DownloadAudio } from './download-audio.js';

/**
 * What a hook or a custom event's `handle` may use, built for each job. No settings and no
 * secrets: what a hook needs of the configuration it reads itself, so a hook that logs its
 * context cannot leak WEBHOOK_SECRETS or ADMIN_PASSWORD.
 */
export interface HookContext {
  /** The worker's logger, with the delivery's `jobId`, `event` and `id` on every line. */
  readonly logger: Logger;
  /**
   * The store the audio went to (local, S3 or your own), read-only: `read(file)` streams a
   * stored file. Writing is the framework's (downloadAudio), and the archive is not reachable
   * from here: a hook that could write the store could wipe what replay needs.
   */
  readonly store: ReadOnlyAudioStore;
  /** Revoked API keys, fed by `key.revoked` deliveries. */
  readonly revocations: RevocationRegistry;
  /** Items the provider reported failed, fed by `audio.failed` deliveries. */
  readonly failures: FailureLog;
  /**
   * The built-in download into the store, as `audio.ready` uses it: CDN_URL origins only, SSRF
   * guard, DOWNLOAD_MAX_BYTES, DOWNLOAD_TIMEOUT_MS, atomic write, SHA-256, `<id>.json` metadata.
   * Idempotent by id; a transient failure throws an error that retries the job.
   */
  readonly downloadAudio: DownloadAudio;
  /** The delivery being handled. */
  readonly delivery: DeliveryInfo;
}

/**
 * The framework's side of the hooks: their types. YOUR hooks live in src/custom/hooks.ts, which
 * upstream never edits. Each hook runs in a worker after the built-in handling of its event has
 * succeeded (the audio is stored, the failure or revocation recorded). A hook that throws fails
 * the job, which is retried with backoff and kept in `failed` for a later `retry`, so hooks must
 * be idempotent: the same event can reach them more than once.
 */
export interface Hooks {
  audioReady(event: AudioReadyEvent, audio: AudioMetadata, context: HookContext): Promise<void>;
  audioFailed(event: AudioFailedEvent, context: HookContext): Promise<void>;
  keyRevoked(event: KeyRevokedEvent, context: HookContext): Promise<void>;
}

const nothing = () => Promise.resolve();

/** The hooks you did not write: nothing beyond the built-in handling, which already logs. */
export function withDefaults(hooks: Partial<Hooks> = {}): Hooks {
  return { audioReady: nothing, audioFailed: nothing, keyRevoked: nothing, ...hooks };
}
