import type { AudioStore } from '../audio-store.js';
import { s3ConditionalPut } from './s3-conditional-put.js';
import { s3ItemObject } from './s3-item-object.js';
import type { S3Location } from './s3-location.js';
import { s3WriteObject } from './s3-write-object.js';

type WriteWithMetadata = NonNullable<AudioStore['writeWithMetadata']>;

/**
 * AudioStore.writeWithMetadata of the S3 store: the audio, then its metadata. Two runs of one
 * item may interleave their PUTs (A's audio, B's audio, B's metadata, A's metadata: A's metadata
 * beside B's audio; docs/performance-history.md says how often). The metadata is written only while the audio is
 * still the object this run wrote (its ETag), each PUT conditional on the metadata looked at
 * before that look: a run whose audio was replaced leaves the metadata to the run that replaced
 * it, which writes its own after.
 */
export async function s3WriteWithMetadata(
  s3: S3Location,
  audio: Parameters<WriteWithMetadata>[0],
  metadata: Parameters<WriteWithMetadata>[1],
): Promise<void> {
  const etag = await s3WriteObject(s3, audio.name, audio.source, audio.options);
  const item = { ...audio.options, contentType: 'application/json' };
  await s3ConditionalPut(s3, metadata.name, Buffer.from(metadata.bytes()), item, () =>
    stillHolds(s3, audio.name, etag),
  );
}

/** True while `name` is still the object a write made (its ETag): no other run replaced it. */
async function stillHolds(s3: S3Location, name: string, etag: string | undefined) {
  if (etag === undefined) return true;
  const found = await s3ItemObject(s3, name);
  return found?.etag?.replace(/"/g, '') === etag.replace(/"/g, '');
}
