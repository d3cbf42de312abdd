/**
 * What application code imports from this package, and what a fork's src/custom/ files import
 * (`from '../index.js'`). The service itself starts from main.ts.
 *
 *   import { createRevocationRegistry } from 'audio-webhooks';
 *   const keys = createRevocationRegistry(redis, process.env.QUEUE_PREFIX ?? 'audio-webhooks');
 *   if (await keys.isKeyRevoked(apiKeyId)) throw new Error('API key revoked');
 */
export {
  createReceiver,
  type Receiver,
  type ReceiverOptions,
  type WebSettings,
} from './receiver/receiver.js';
export { defineEvent, type EventDefinition } from './hooks/define-event.js';
export type { Delivery } from './provider-spec/delivery.js';
export { loadConfig, ConfigError, type Config } from './settings.js';
export {
  createRevocationRegistry,
  type RevocationRegistry,
  type RevokedKey,
} from './history/revocation-registry.js';
export {
  createFailureLog,
  type FailureLog,
  type LoggedFailure,
  /** @deprecated the failure log's entry is a LoggedFailure now. */
  type LoggedFailure as RecordedFailure,
} from './history/failure-log.js';
export { signPayload } from './provider-spec/signature.js';
export { verifySignature, type VerifyResult } from './provider-spec/signature.js';
export type {
  WebhookEvent,
  AudioReadyEvent,
  AudioFailedEvent,
  KeyRevokedEvent,
} from './provider-spec/events.js';
export { startWorkers, type WorkerOptions, type WorkerSettings } from './worker/start-workers.js';
export type { Hooks } from './hooks/hooks.js';
export type {
  HookContext,
  ReadOnlyAudioStore,
  DeliveryInfo,
  DownloadAudio,
  DownloadAudioOptions,
} from './hooks/hook-context.js';
export type {
  AudioStore,
  AudioMetadata,
  AudioDetails,
  FileArea,
  /** @deprecated the store's small-files area is a FileArea now. */
  FileArea as ArchiveArea,
} from './storage/audio-store.js';
export {
  createLocalFileArea,
  /** @deprecated the store's small-files area is a FileArea now: createLocalFileArea. */
  createLocalFileArea as createLocalArchiveArea,
} from './storage/local/local-file-area.js';
export {
  createArchive,
  type Archive,
  type ArchivedDelivery,
  type ArchiveQuery,
  type BatchedLine,
} from './archive/archive.js';
export { StorageError } from './storage/storage-errors.js';
export { createLocalAudioStore } from './storage/local/local-audio-store.js';
export {
  createS3AudioStore,
  createS3Client,
  type S3Settings,
} from './storage/s3/s3-audio-store.js';
export { createAudioStore } from './storage/create-audio-store.js';
export { createLocalBlobArea } from './provider/local-blob-area.js';
export type { BlobArea } from './provider/tts-cache.js';
export {
  createProviderClient,
  type ProviderClient,
  type ProviderClientOptions,
  type AudioResult,
} from './provider/create-provider-client.js';
export {
  ProviderError,
  ProviderUnavailableError,
  RateLimitDeadlineError,
  NoKeyLeftError,
} from './provider/provider-errors.js';
export type { ApiKeyConfig, Endpoint } from './provider/provider-settings.js';
