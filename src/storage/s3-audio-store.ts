import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import type { Config } from '../config/config.js';
import {
  ARCHIVE_FOLDER,
  type ArchiveArea,
  type AudioMetadata,
  type AudioStore,
  type WriteOptions,
} from './audio-store.js';
import { archiveSegments } from './archive-path.js';
import { itemRecord, recordsItem } from './item-record.js';
import { multipartEtag } from './multipart-etag.js';
import { describe, s3StorageError, statusOf } from './s3-storage-error.js';
import { NameCollisionError, StorageError } from './storage-errors.js';

export type S3Settings = Pick<
  Config,
  's3Bucket' | 's3Prefix' | 's3Endpoint' | 's3Region' | 's3ForcePathStyle'
>;

/**
 * Parts of a multipart upload, and how many are in flight: one upload holds PARTS_IN_FLIGHT + 1
 * part buffers (16 MiB: the part being sent and the one being filled), whatever the file's size.
 * 8 MiB parts take a file up to 80 GB within S3's 10,000 parts; DOWNLOAD_MAX_BYTES is far below.
 */
const PART_BYTES = 8 * 1024 * 1024;
const PARTS_IN_FLIGHT = 1;
/** S3's largest single PUT: a longer file, or one of unknown length, is a multipart upload. */
const MAX_PUT_BYTES = 5 * 1024 ** 3;
/** An incomplete multipart upload older than this was left by a killed worker: aborted at start. */
const STALE_UPLOAD_MS = 60 * 60 * 1000;
/** The start-up check's bound: an endpoint that does not answer must not hang the start. */
const CHECK_TIMEOUT_MS = 10_000;
/** The object's own record of the item it holds (user metadata, `x-amz-meta-item-id`). */
const ITEM_ID = 'item-id';
/**
 * Conditional PUTs of one write: each 412 after the first means another run of the item wrote.
 * With 3, one of six runs of an item at once failed (412 three times) within 15 rounds, and a
 * run that fails downloads again when retried.
 */
const CONDITIONAL_ATTEMPTS = 6;

export interface S3StoreOptions {
  /** An incomplete upload older than this is a killed worker's. @defaultValue 1 hour */
  readonly staleUploadMs?: number;
  /** ListMultipartUploads' page size. @defaultValue the store's (1,000 on S3) */
  readonly uploadsPerPage?: number;
}

interface StoredObject {
  readonly bytes: number;
  /** Its record of the item it holds (storage/item-record.ts); undefined when it has none. */
  readonly record: string | undefined;
  readonly etag: string | undefined;
}

/**
 * An S3 client for AUDIO_STORE=s3. Against a custom endpoint (Ceph RGW, MinIO, R2, B2) the
 * SDK's default streaming checksums (since 3.729) are turned down to "when required": those
 * stores reject or mangle the aws-chunked trailers. Credentials: the SDK's default chain.
 */
export function createS3Client(settings: S3Settings): S3Client {
  // On Node < 22 the SDK writes a nine-line notice to stderr, which would break the one-line
  // start-up errors; the start-up report says the same in one log line (startup-report.ts).
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const custom = settings.s3Endpoint !== undefined;
  return new S3Client({
    region: settings.s3Region,
    ...(custom ? { endpoint: settings.s3Endpoint } : {}),
    forcePathStyle: settings.s3ForcePathStyle,
    requestChecksumCalculation: custom ? 'WHEN_REQUIRED' : 'WHEN_SUPPORTED',
    responseChecksumValidation: custom ? 'WHEN_REQUIRED' : 'WHEN_SUPPORTED',
    // The SDK retries throttling, 5xx and network errors itself (3 attempts); past that the job's
    // own backoff takes over, so a store that is away for minutes still loses nothing.
    maxAttempts: 3,
    cacheMiddleware: true,
    requestHandler: { connectionTimeout: 5_000, requestTimeout: 60_000 },
  });
}

/**
 * Audio in an S3-compatible bucket, under `<S3_PREFIX><name>`. Every object under its final key
 * is whole: a file smaller than a part is one PUT; a larger one a multipart upload that exists
 * under its key only once completed after its last part, and is aborted when it fails (a killed
 * worker's leftovers are aborted at the next start, and by the bucket lifecycle rule in
 * docs/storage.md). The audio streams from the CDN into the upload; at most a few parts are held.
 *
 * Never overwritten by another item, never removed: writes are create-only (`If-None-Match: *`),
 * and each object records the id it holds. An object of the same id (an earlier run that died
 * before its metadata, or another run of the item at the same time: a replay beside the original
 * job, a stalled job re-run) is whole, as every object under its key is, and is replaced
 * atomically by the write (`If-Match` on its ETag, or a completed multipart upload), never
 * deleted first: a second run that then failed for good (an expired signed URL) would otherwise
 * leave the item gone. One of another id, or of none, fails the job (NameCollisionError). Ceph
 * ignores `If-None-Match` on CompleteMultipartUpload, so a multipart upload looks first; a key is
 * a function of the id (storage/file-name.ts), so a race after the look is between runs of one item.
 */
export function createS3AudioStore(
  settings: S3Settings,
  client = createS3Client(settings),
  options: S3StoreOptions = {},
) {
  const staleUploadMs = options.staleUploadMs ?? STALE_UPLOAD_MS;
  const bucket = settings.s3Bucket ?? '';
  const where = `S3_BUCKET ${bucket} at S3_ENDPOINT ${settings.s3Endpoint ?? '(AWS)'}`;
  const key = (name: string) => `${settings.s3Prefix}${name}`;
  const fail = (error: unknown, what: string) => s3StorageError(error, `${what} in ${where}`);

  async function head(name: string): Promise<StoredObject | undefined> {
    try {
      const found = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key(name) }));
      return {
        bytes: found.ContentLength ?? 0,
        record: found.Metadata?.[ITEM_ID],
        etag: found.ETag,
      };
    } catch (error: unknown) {
      if (statusOf(error) === 404) return undefined;
      throw fail(error, `looking for ${name}`);
    }
  }

  /**
   * The object under `name` when it may be replaced by a write of `id`: undefined when there is
   * none; itself when it is this item's (whole, as every object under its key is: an earlier
   * run, or one running now); a collision when it is another item's or records no item at all
   * (not written by this service, so not ours to replace). Nothing is ever deleted to make room:
   * the object may be a finished run's, and the write that follows replaces it atomically.
   */
  async function sameItem(name: string, id: string | undefined): Promise<StoredObject | undefined> {
    const existing = await head(name);
    if (existing === undefined) return undefined;
    // Compared as recorded, never decoded: another tool's record need not decode at all.
    if (id === undefined || existing.record === undefined || !recordsItem(existing.record, id))
      throw new NameCollisionError(
        name,
        existing.record ?? '(none recorded)',
        id ?? '(none given)',
      );
    return existing;
  }

  const itemMetadata = (id: string | undefined) =>
    id === undefined ? {} : { Metadata: { [ITEM_ID]: itemRecord(id) } };

  /** True while `name` is still the object a write made (its ETag): no other run replaced it. */
  async function stillHolds(name: string, etag: string | undefined): Promise<boolean> {
    if (etag === undefined) return true;
    const found = await head(name);
    return found?.etag?.replace(/"/g, '') === etag.replace(/"/g, '');
  }

  /**
   * One PUT of a body smaller than a part, create-only (S3 and Ceph honour `If-None-Match`). On
   * 412 the object there is looked at: this item's is replaced with `If-Match` on its ETag (one
   * atomic replace, never a delete-then-write gap in which the item is gone); if another run of
   * the item replaced it in between, the look is made again, a bounded number of times.
   * `still`, asked before each PUT (after the look), stops the write when it answers false.
   */
  async function put(
    name: string,
    body: Buffer,
    id: string | undefined,
    still?: () => Promise<boolean>,
  ): Promise<string | undefined> {
    let onto: StoredObject | undefined;
    for (let attempt = 1; ; attempt++) {
      if (still !== undefined && !(await still())) return undefined;
      try {
        return (await client.send(putObject(name, body, body.length, onto, id))).ETag;
      } catch (error: unknown) {
        if (statusOf(error) !== 412 || attempt === CONDITIONAL_ATTEMPTS)
          throw fail(error, `writing ${name}`);
      }
      onto = await sameItem(name, id);
    }
  }

  /**
   * A PUT that creates the object when `onto` is undefined (nothing of the item was there), and
   * otherwise replaces exactly the object looked at: never another run's newer one.
   */
  const putObject = (
    name: string,
    body: Buffer | Readable,
    bytes: number,
    onto: StoredObject | undefined,
    id: string | undefined,
  ) =>
    new PutObjectCommand({
      Bucket: bucket,
      Key: key(name),
      Body: body,
      ContentLength: bytes,
      // Unquoted: Ceph RGW (and DigitalOcean Spaces, built on it) answer 412 to the quoted form
      // HeadObject returns; AWS S3 takes either.
      ...(onto?.etag === undefined
        ? { IfNoneMatch: '*' }
        : { IfMatch: onto.etag.replace(/"/g, '') }),
      ...itemMetadata(id),
    });

  /**
   * One PUT streaming `source`, when its length is known before it is read (the CDN's
   * content-length): the gateway takes the bytes as they come, as `curl -T` sends a file, and
   * holds nothing of them until the PUT is whole (a killed worker leaves nothing, not even an
   * incomplete upload). Looked for first, as a multipart upload is: a streamed body
   * cannot be sent again after a 412, so this item's object is replaced with `If-Match` on its
   * ETag, and a race with another run of the item fails the write, to be retried. The SDK does
   * not retry a streamed body either; the job's own retries do. A source that fails, ends short
   * or runs long aborts the PUT, which then stores nothing.
   */
  async function putStreamed(
    name: string,
    source: AsyncIterable<Uint8Array>,
    bytes: number,
    id: string | undefined,
  ): Promise<string | undefined> {
    const existing = await sameItem(name, id);
    const abort = new AbortController();
    const counted = async function* () {
      let sent = 0;
      try {
        for await (const chunk of source) {
          sent += chunk.length;
          if (sent > bytes) throw new Error(`the source ran past its ${bytes} bytes`);
          yield chunk;
        }
        if (sent !== bytes) throw new Error(`the source ended after ${sent} of its ${bytes} bytes`);
      } catch (error: unknown) {
        // The body is piped into the request, which a failing body alone would leave waiting.
        abort.abort(error);
        throw error;
      }
    };
    const body = Readable.from(counted(), { objectMode: false });
    // pipe() gives the body no 'error' listener: its failure is reported through the abort.
    body.on('error', () => undefined);
    try {
      const answer = await client.send(putObject(name, body, bytes, existing, id), {
        abortSignal: abort.signal,
      });
      return answer.ETag;
    } catch (error: unknown) {
      body.destroy();
      throw abort.signal.aborted && abort.signal.reason instanceof Error
        ? fail(abort.signal.reason, `writing ${name}`)
        : error;
    }
  }

  /**
   * A multipart upload of `source`. The object is looked for first, since Ceph
   * ignores If-None-Match on CompleteMultipartUpload: this item's is replaced by the completed
   * upload (atomic, as completing one is); another item's is a collision before any part is sent.
   *
   * Written here rather than with lib-storage's Upload: Upload gathers each part's chunks in a
   * list, then copies them into a fresh buffer, so a part lived twice and every part was new
   * garbage (the 200 MB file grew the process by 83 MB, more than the whole of bare undici's
   * download). Here each chunk is copied once, as it arrives, into one of PARTS_IN_FLIGHT + 1
   * part buffers allocated for the upload and reused: what it holds is those buffers, whatever
   * the file's size. A part is a Buffer, so the SDK's own retries can send it again.
   */
  async function upload(
    name: string,
    source: AsyncIterable<Uint8Array>,
    id: string | undefined,
  ): Promise<string | undefined> {
    const existing = await sameItem(name, id);
    const target = { Bucket: bucket, Key: key(name) };
    const created = await client.send(
      new CreateMultipartUploadCommand({ ...target, ...itemMetadata(id) }),
    );
    const uploadId = created.UploadId ?? '';
    const parts: { PartNumber: number; ETag: string | undefined }[] = [];
    const free: Buffer[] = [];
    const inFlight = new Set<Promise<void>>();
    let failure: { error: unknown } | undefined;
    const send = (part: Buffer, bytes: number) => {
      const PartNumber = parts.length + 1;
      parts.push({ PartNumber, ETag: undefined });
      const sending: Promise<void> = client
        .send(
          new UploadPartCommand({
            ...target,
            UploadId: uploadId,
            PartNumber,
            Body: part.subarray(0, bytes),
            ContentLength: bytes,
          }),
        )
        .then(
          (answer) => {
            parts[PartNumber - 1] = { PartNumber, ETag: answer.ETag };
            free.push(part);
          },
          (error: unknown) => {
            failure ??= { error };
          },
        )
        .finally(() => inFlight.delete(sending));
      inFlight.add(sending);
    };
    const settle = async (room: number) => {
      while (inFlight.size > room) await Promise.race(inFlight);
      if (failure !== undefined) throw failure.error;
    };
    try {
      let part: Buffer = Buffer.allocUnsafeSlow(PART_BYTES);
      let filled = 0;
      const take = async (chunk: Uint8Array) => {
        for (let at = 0; at < chunk.length;) {
          const copied = Math.min(chunk.length - at, PART_BYTES - filled);
          part.set(chunk.subarray(at, at + copied), filled);
          filled += copied;
          at += copied;
          if (filled < PART_BYTES) continue;
          await settle(PARTS_IN_FLIGHT - 1);
          send(part, filled);
          part = free.pop() ?? Buffer.allocUnsafeSlow(PART_BYTES);
          filled = 0;
        }
      };
      for await (const chunk of source) await take(chunk);
      // At least one whole part was read before a multipart upload is chosen.
      if (filled > 0) send(part, filled);
      await settle(0);
      const completed = await client.send(
        new CompleteMultipartUploadCommand({
          ...target,
          UploadId: uploadId,
          MultipartUpload: { Parts: parts },
          ...(existing === undefined ? { IfNoneMatch: '*' } : {}),
        }),
      );
      // `||`: Ceph's answer holds an empty ETag.
      return completed.ETag || multipartEtag(parts);
    } catch (error: unknown) {
      await Promise.allSettled(inFlight);
      await client
        .send(new AbortMultipartUploadCommand({ ...target, UploadId: uploadId }))
        .catch(() => undefined);
      throw error;
    }
  }

  /** AudioStore.write, resolving to the ETag of the object written. */
  async function writeObject(
    name: string,
    source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
    options: WriteOptions | undefined,
  ): Promise<string | undefined> {
    const id = options?.id;
    // Up to one part is read first: a smaller body is one conditional PUT from memory; a larger
    // one is one streamed PUT when its length is known (the CDN declared it), else a multipart
    // upload.
    const iterator = toAsyncIterator(source);
    const first: Uint8Array[] = [];
    let bytes = 0;
    let ended = false;
    while (bytes < PART_BYTES) {
      const next = await iterator.next();
      if (next.done === true) {
        ended = true;
        break;
      }
      first.push(next.value);
      bytes += next.value.length;
    }
    let sourceFailure: { error: unknown } | undefined;
    try {
      if (ended) return await put(name, Buffer.concat(first), id);
      else {
        const rest = recordFailure(
          { [Symbol.asyncIterator]: () => iterator },
          (error) => (sourceFailure = { error }),
        );
        const whole = (async function* () {
          // Handed on and let go of: the first part's chunks are not kept for the whole upload.
          for (let chunk = first.shift(); chunk !== undefined; chunk = first.shift()) yield chunk;
          yield* rest;
        })();
        const known = options?.bytes;
        return known !== undefined && known <= MAX_PUT_BYTES
          ? await putStreamed(name, whole, known, id)
          : await upload(name, whole, id);
      }
    } catch (error: unknown) {
      // The source is closed at once (the CDN's connection), not left open until its timeout.
      await iterator.return?.().catch(() => undefined);
      // A source that failed (the CDN, the size cap) keeps its own error.
      if (sourceFailure !== undefined) throw sourceFailure.error;
      if (error instanceof NameCollisionError || error instanceof StorageError) throw error;
      throw fail(error, `writing ${name}`);
    }
  }

  const store: AudioStore & { checkBucket(): Promise<void>; readonly archive: ArchiveArea } = {
    archive: createS3ArchiveArea(client, bucket, `${settings.s3Prefix}${ARCHIVE_FOLDER}/`, fail),
    refusesOtherItems: true,

    async write(name, source, options) {
      await writeObject(name, source, options);
    },

    // Two runs of one item may interleave their PUTs (A's audio, B's audio, B's metadata, A's
    // metadata: A's metadata beside B's audio, 3 of 15 rounds of six runs). The metadata is
    // written only while the audio is still the object this run wrote (its ETag), each PUT
    // conditional on the metadata looked at before that look: a run whose audio was replaced
    // leaves the metadata to the run that replaced it, which writes its own after.
    async writeWithMetadata(audio, metadata) {
      const etag = await writeObject(audio.name, audio.source, audio.options);
      const id = audio.options?.id;
      await put(metadata.name, Buffer.from(metadata.bytes()), id, () =>
        stillHolds(audio.name, etag),
      );
    },

    read(name) {
      return (async function* () {
        const answer = await client
          .send(new GetObjectCommand({ Bucket: bucket, Key: key(name) }))
          .catch((error: unknown) => {
            throw fail(error, `reading ${name}`);
          });
        yield* answer.Body as Readable;
      })();
    },

    async readMetadata(stem) {
      try {
        const answer = await client.send(
          new GetObjectCommand({ Bucket: bucket, Key: key(`${stem}.json`) }),
        );
        if (answer.Body === undefined) return undefined;
        return JSON.parse(await answer.Body.transformToString('utf8')) as AudioMetadata;
      } catch (error: unknown) {
        if (statusOf(error) === 404) return undefined;
        throw fail(error, `reading ${stem}.json`);
      }
    },

    async holds(name, bytes, sha256) {
      const found = await head(name);
      if (found?.bytes !== bytes) return false;
      const hash = createHash('sha256');
      for await (const chunk of store.read(name)) hash.update(chunk);
      return hash.digest('hex') === sha256;
    },

    async removeStaleTemps() {
      const removed: string[] = [];
      const before = Date.now() - staleUploadMs;
      let marker: { KeyMarker?: string; UploadIdMarker?: string } = {};
      for (;;) {
        const listed = await client
          .send(
            new ListMultipartUploadsCommand({
              Bucket: bucket,
              Prefix: settings.s3Prefix,
              ...(options.uploadsPerPage === undefined
                ? {}
                : { MaxUploads: options.uploadsPerPage }),
              ...marker,
            }),
          )
          .catch((error: unknown) => {
            throw fail(error, 'listing incomplete uploads');
          });
        for (const left of listed.Uploads ?? []) {
          // An upload whose start is not known is not known to be stale: the lifecycle rule
          // (deploy/overlays/s3/lifecycle.json) removes it if it is.
          const initiated = left.Initiated?.getTime();
          if (left.Key === undefined || left.UploadId === undefined) continue;
          if (initiated === undefined || initiated > before) continue;
          await client
            .send(
              new AbortMultipartUploadCommand({
                Bucket: bucket,
                Key: left.Key,
                UploadId: left.UploadId,
              }),
            )
            .catch((error: unknown) => {
              throw fail(error, `aborting the incomplete upload of ${left.Key ?? ''}`);
            });
          removed.push(left.Key);
        }
        if (listed.IsTruncated !== true) return removed;
        marker = {
          ...(listed.NextKeyMarker === undefined ? {} : { KeyMarker: listed.NextKeyMarker }),
          ...(listed.NextUploadIdMarker === undefined
            ? {}
            : { UploadIdMarker: listed.NextUploadIdMarker }),
        };
      }
    },

    /** At start: the bucket exists and these credentials may use it; else one line to fix it. */
    async checkBucket() {
      try {
        await client.send(new HeadBucketCommand({ Bucket: bucket }), {
          abortSignal: AbortSignal.timeout(CHECK_TIMEOUT_MS),
        });
      } catch (error: unknown) {
        const status = statusOf(error);
        const reason =
          status === 404
            ? 'the bucket does not exist'
            : status === 403 || status === 400
              ? `refused (${status}): check the credentials and the bucket policy`
              : isMissingCredentials(error)
                ? 'no credentials: the AWS SDK found none (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE in ~/.aws, a web identity token, or a pod or instance role)'
                : `unreachable: ${describe(error)}`;
        throw new StorageError(`${where}: ${reason}`, undefined, { cause: error });
      }
    },
  };
  return store;
}

/** Deletes in flight at once while removing an archive folder. */
const DELETES_IN_FLIGHT = 8;

/**
 * The archive as objects under `<S3_PREFIX>.archive/`: a PUT is whole by nature. One DELETE per
 * object when a folder is removed: DeleteObjects needs a checksum header that S3-compatible
 * stores disagree on (docs/storage.md), and an hour's entries are few enough.
 */
function createS3ArchiveArea(
  client: S3Client,
  bucket: string,
  root: string,
  fail: (error: unknown, what: string) => StorageError,
): ArchiveArea {
  const fileKey = (path: string) => `${root}${archiveSegments(path, 'file').join('/')}`;
  const folderKey = (path: string) =>
    `${root}${archiveSegments(path, 'folder')
      .map((segment) => `${segment}/`)
      .join('')}`;
  /** Every page of a listing under `prefix`, one at a time. */
  async function* pages(prefix: string, delimiter?: string) {
    let token: string | undefined;
    do {
      const page = await client
        .send(
          new ListObjectsV2Command({
            Bucket: bucket,
            Prefix: prefix,
            ...(delimiter === undefined ? {} : { Delimiter: delimiter }),
            ...(token === undefined ? {} : { ContinuationToken: token }),
          }),
        )
        .catch((error: unknown) => {
          throw fail(error, `listing ${prefix}`);
        });
      yield page;
      token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
  }
  return {
    async put(path, body) {
      await client
        .send(
          new PutObjectCommand({
            Bucket: bucket,
            Key: fileKey(path),
            Body: body,
            ContentLength: body.length,
            ContentType: 'application/json',
          }),
        )
        .catch((error: unknown) => {
          throw fail(error, `archiving ${path}`);
        });
    },
    async get(path) {
      try {
        const answer = await client.send(
          new GetObjectCommand({ Bucket: bucket, Key: fileKey(path) }),
        );
        return answer.Body === undefined ? undefined : await answer.Body.transformToByteArray();
      } catch (error: unknown) {
        if (statusOf(error) === 404) return undefined;
        throw fail(error, `reading the archive's ${path}`);
      }
    },
    async *list(path, options) {
      const prefix = folderKey(path);
      const deep = options?.deep === true;
      // The same names the local area lists: no dot-names (no temp of ours has one here, but a
      // tool's may), folders with a trailing `/`.
      const shown = (name: string) => !name.split('/').some((segment) => segment.startsWith('.'));
      for await (const page of pages(prefix, deep ? undefined : '/')) {
        for (const folder of page.CommonPrefixes ?? []) {
          const name = folder.Prefix?.slice(prefix.length);
          if (name !== undefined && shown(name)) yield name;
        }
        for (const object of page.Contents ?? []) {
          const name = object.Key?.slice(prefix.length);
          if (name !== undefined && name !== '' && shown(name)) yield name;
        }
      }
    },
    async remove(path) {
      for await (const page of pages(folderKey(path))) {
        const keys = (page.Contents ?? []).flatMap((object) =>
          object.Key === undefined ? [] : [object.Key],
        );
        for (let start = 0; start < keys.length; start += DELETES_IN_FLIGHT) {
          await Promise.all(
            keys.slice(start, start + DELETES_IN_FLIGHT).map((Key) =>
              client
                .send(new DeleteObjectCommand({ Bucket: bucket, Key }))
                .catch((error: unknown) => {
                  throw fail(error, `removing ${Key}`);
                }),
            ),
          );
        }
      }
    },
  };
}

function toAsyncIterator(
  source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
): AsyncIterator<Uint8Array> {
  if (Symbol.asyncIterator in source) return source[Symbol.asyncIterator]();
  const sync = source[Symbol.iterator]();
  return { next: () => Promise.resolve(sync.next()) };
}

/** The source as it is, telling `failed` when reading it throws (the upload rethrows it). */
async function* recordFailure(
  source: AsyncIterable<Uint8Array>,
  failed: (error: unknown) => void,
): AsyncGenerator<Uint8Array> {
  try {
    yield* source;
  } catch (error: unknown) {
    failed(error);
    throw error;
  }
}

/** The SDK's default chain found nothing: the endpoint was never asked, so not "unreachable". */
function isMissingCredentials(error: unknown): boolean {
  return error instanceof Error && error.name === 'CredentialsProviderError';
}
