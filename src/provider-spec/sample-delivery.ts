import { randomUUID } from 'node:crypto';

export interface SampleOptions {
  readonly id?: string;
  /** Fields merged over the sample's `data`, shallowly: a key given replaces the sample's whole. */
  readonly data?: Readonly<Record<string, unknown>>;
  /** Origin of the sample `audio_url`. @defaultValue 'https://cdn.example.com' */
  readonly cdnOrigin?: string;
  /** Path of the sample `audio_url`. @defaultValue `/<id>.mp3` */
  readonly audioPath?: string;
}

/**
 * A delivery body as the provider sends it (docs/provider.md, "A delivery"), for the CLI's `send`, the tests and the
 * benchmark. Events other than `audio.ready` get only `data.id`: the provider shows nothing more.
 */
export function sampleDelivery(
  event: string,
  options: SampleOptions = {},
): Record<string, unknown> {
  const id = options.id ?? randomUUID();
  const base =
    event === 'audio.ready'
      ? {
          id,
          kind: 'tts',
          audio_url: `${options.cdnOrigin ?? 'https://cdn.example.com'}${options.audioPath ?? `/${encodeURIComponent(id)}.mp3`}`,
          voice: 'alloy',
          created_at: new Date().toISOString(),
        }
      : { id };
  return { event, data: { ...base, ...options.data } };
}
