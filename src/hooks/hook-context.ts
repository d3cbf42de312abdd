import type { Logger } from 'pino';
import type { FailureLog } from '../history/failure-log.js';
import type { RevocationRegistry } from '../history/revocation-registry.js';
import type { AudioDetails, AudioMetadata, AudioStore } from '../storage/audio-store.js';

/** The delivery a download is made for: its metadata records it. */
export interface DeliveryInfo {
  /** The BullMQ job handling the delivery. */
  readonly jobId: string;
  /** The delivery's `event`. */
  readonly event: string;
  /** Its `data.id`. */
  readonly id: string;
  /** When the receiver accepted the delivery, ISO 8601. */
  readonly receivedAt: string;
  /**
   * Its `data` as the provider wrote it: the JSON text cut from the body as received, not a
   * re-serialised copy (JSON.stringify writes 1e20 as 21 digits). The log entries keep this.
   * Undefined for a job queued by an earlier version, which holds the parsed delivery only.
   */
  readonly dataText?: string;
  /** 1 on the first run of the job, 2 on its first retry, and so on. */
  readonly attempt: number;
  /**
   * True when no run of this job started before: not a retry, not a job taken over from a
   * worker that died, not a replay. Nothing of this run's can be stored yet.
   */
  readonly firstRun: boolean;
  /**
   * True when an operator's `replay` put the delivery on the queue again (the audio may be
   * there already; a hook that sends mail or bills may want to skip). False for the provider's.
   */
  readonly replay: boolean;
}

export interface DownloadAudioOptions {
  /** The item's id: the stored names are `<id><ext>` and `<id>.json` (encoded when unsafe). */
  readonly id: string;
  /** Recorded in the metadata beside the download's own fields. @defaultValue none */
  readonly details?: AudioDetails;
}

/** The built-in download, as a handler or hook calls it. */
export type DownloadAudio = (url: string, options: DownloadAudioOptions) => Promise<AudioMetadata>;

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
