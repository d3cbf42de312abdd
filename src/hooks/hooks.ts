import type { AudioMetadata } from '../storage/audio-store.js';
import type {
  AudioFailedEvent,
  AudioReadyEvent,
  KeyRevokedEvent,
} from '../provider-spec/events.js';
import type { HookContext } from './hook-context.js';

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
