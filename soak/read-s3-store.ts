import { createHash } from 'node:crypto';
import { GetObjectCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import type { ArchivedEntry, StoredEntry } from './observations.js';
import { archiveEntryOf, type StoreContents } from './archive-lines.js';

/**
 * What the bucket holds under S3_PREFIX, read with the SDK straight from the objects (not through
 * the service's store): each `<stem>.json` metadata object, the SHA-256 of the audio object it
 * names, every archive entry under `.archive/` (lines of its `.ndjson` batches, `.json` entry
 * objects; not the TTS cache), and objects that should not be there.
 */
export async function readS3Store(
  client: S3Client,
  bucket: string,
  prefix: string,
): Promise<StoreContents> {
  const keys: string[] = [];
  let token: string | undefined;
  for (let page = 0; page < 100_000; page += 1) {
    const listed = await tried('the listing', (abortSignal) =>
      client.send(
        new ListObjectsV2Command({
          Bucket: bucket,
          Prefix: prefix,
          ...(token === undefined ? {} : { ContinuationToken: token }),
        }),
        { abortSignal },
      ),
    );
    for (const object of listed.Contents ?? []) if (object.Key !== undefined) keys.push(object.Key);
    token = listed.NextContinuationToken;
    if (token === undefined) break;
  }
  const names = new Set(keys.map((key) => key.slice(prefix.length)));
  const store: StoredEntry[] = [];
  const archive: ArchivedEntry[] = [];
  const named = new Set<string>();
  let unreadableArchive = 0;
  // Eight requests at a time: one at a time took minutes for a 30-minute run's objects.
  await inParallel([...names], 8, async (name) => {
    if (name.startsWith('.archive/')) {
      if (name.startsWith('.archive/tts-cache/')) return;
      if (!name.endsWith('.ndjson') && !name.endsWith('.json')) return;
      const text = (await bodyOf(client, bucket, prefix + name)).toString('utf8');
      const lines = name.endsWith('.json') ? [text] : text.split('\n').filter((l) => l !== '');
      for (const line of lines) {
        const entry = archiveEntryOf(line);
        if (entry === undefined) unreadableArchive += 1;
        else archive.push(entry);
      }
      return;
    }
    if (name.includes('/') || !name.endsWith('.json')) return;
    const metadata = JSON.parse((await bodyOf(client, bucket, prefix + name)).toString('utf8')) as {
      id: string;
      event: string;
      file: string;
      sha256: string;
    };
    named.add(metadata.file);
    store.push({
      event: metadata.event,
      id: metadata.id,
      metadataSha256: metadata.sha256,
      ...(names.has(metadata.file)
        ? { contentSha256: await objectSha256(client, bucket, prefix + metadata.file) }
        : {}),
    });
  });
  const strays = [...names].filter(
    (name) => !name.startsWith('.archive/') && !name.endsWith('.json') && !named.has(name),
  );
  return { store, archive, strays, unreadableArchive };
}

/** A read's whole deadline, and how many times it is tried: a read that hangs must not hang the soak. */
const READ_DEADLINE_MS = 60_000;
const READ_TRIES = 4;

async function tried<T>(what: string, read: (signal: AbortSignal) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await read(AbortSignal.timeout(READ_DEADLINE_MS));
    } catch (error: unknown) {
      if (attempt >= READ_TRIES) throw new Error(`${what}: ${String(error)}`, { cause: error });
    }
  }
}

function bodyOf(client: S3Client, bucket: string, key: string): Promise<Buffer> {
  return tried(key, async (abortSignal) => {
    const answer = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }), {
      abortSignal,
    });
    return Buffer.from((await answer.Body?.transformToByteArray()) ?? new Uint8Array());
  });
}

function objectSha256(client: S3Client, bucket: string, key: string): Promise<string> {
  return tried(key, async (abortSignal) => {
    const answer = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }), {
      abortSignal,
    });
    const hash = createHash('sha256');
    const body = answer.Body as AsyncIterable<Uint8Array> | undefined;
    if (body !== undefined) for await (const chunk of body) hash.update(chunk);
    return hash.digest('hex');
  });
}

/** Runs `work` on every item, at most `width` at once. */
async function inParallel<T>(
  items: readonly T[],
  width: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const item = items[next];
      next += 1;
      if (item !== undefined) await work(item);
    }
  };
  await Promise.all(Array.from({ length: width }, lane));
}
