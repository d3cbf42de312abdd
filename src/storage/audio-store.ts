/** What a delivery tells about its audio: `audio.ready` gives all three; a custom event, its own. */
export interface AudioDetails {
  readonly kind?: string;
  readonly voice?: string;
  readonly created_at?: string;
}

/** What the worker writes next to each audio file, as `<stem>.json`. */
export interface AudioMetadata extends AudioDetails {
  readonly id: string;
  /** The event whose handling downloaded it. */
  readonly event: string;
  readonly audio_url: string;
  /** Where the bytes came from after redirects. */
  readonly final_url: string;
  /** The audio file's name inside AUDIO_DIR (or under S3_PREFIX). */
  readonly file: string;
  readonly bytes: number;
  readonly sha256: string;
  readonly content_type: string;
  readonly downloaded_at: string;
  readonly received_at: string;
  readonly job_id: string;
}

/**
 * Where audio lands. Every write is atomic: no partial file ever carries its final name. To keep
 * audio elsewhere, implement this interface and return it from src/custom/store.ts.
 * Storage trouble (full, read-only, no permission) is thrown as StorageError.
 */
export interface AudioStore {
  /**
   * Streams `source` into `name`, atomically and durably; a failing source leaves nothing.
   * `id` is the item the file belongs to: a store that can record it next to the bytes (S3's
   * object metadata) refuses to replace another item's file with it. `entryDurableLater`: the
   * caller writes another name of the same item next and relies on that write to make both
   * names durable (the downloader's metadata, whose absence or mismatch makes a restart fetch
   * the audio again); a store may then leave the name's own durability to that write.
   * `bytes`: the source's length, when known before it is read (the CDN's content-length); a
   * store may then send it in one request (S3: one streamed PUT instead of a multipart upload),
   * and a source that ends short or runs long then fails the write. `contentType`: the bytes'
   * media type (the CDN's), for a store that keeps one with them (S3's `Content-Type`, which
   * whoever serves the object from the bucket answers with).
   */
  write(
    name: string,
    source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
    options?: WriteOptions,
  ): Promise<void>;
  /**
   * Optional, for speed: `write(audio.name, audio.source, audio.options)` and then the write of
   * the item's metadata file, `metadata.name`, whose bytes are made once the audio's source has
   * ended (its size and SHA-256 are known then), in one call, so that a store can make both
   * durable at once (the local store fsyncs the metadata's temp file while the audio's fsync
   * runs, then renames both). The guarantees are the two writes': neither name ever holds a
   * partial file, and the metadata's name comes after the audio's. A store without it gets the
   * two writes, one after the other.
   */
  writeWithMetadata?(
    audio: {
      readonly name: string;
      readonly source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>;
      readonly options?: WriteOptions;
    },
    metadata: { readonly name: string; readonly bytes: () => Uint8Array },
  ): Promise<void>;
  /** The bytes of a stored file, e.g. for a hook that uploads it elsewhere. */
  read(name: string): AsyncIterable<Uint8Array>;
  /** The parsed `<stem>.json`, or undefined when there is none. */
  readMetadata(stem: string): Promise<AudioMetadata | undefined>;
  /** True when `name` exists with exactly these bytes (size, then SHA-256). */
  holds(name: string, bytes: number, sha256: string): Promise<boolean>;
  /** Removes what a killed process left half written; returns the names removed. */
  removeStaleTemps(): Promise<string[]>;
  /**
   * True when `write` itself refuses to replace a name that holds another item's file (the S3
   * store's conditional writes): the downloader then skips its look for an earlier item on a
   * job's first run. @defaultValue false: the downloader always looks first
   */
  readonly refusesOtherItems?: boolean;
  /**
   * The store's area for small files, beside the audio but out of its names' reach (`.archive/`):
   * the archive of accepted deliveries lives there, for `replay` (archive/archive.ts), and the
   * CLI's TTS cache keeps its bodies there too (provider/store-cache-area.ts). A store without
   * one keeps no archive: replay is then off, and the TTS cache keeps its bodies in a folder of
   * AUDIO_DIR (provider/local-blob-area.ts).
   */
  readonly files?: FileArea;
  /** @deprecated `files`' former name, still read when `files` is absent (fileAreaOf). */
  readonly archive?: FileArea;
}

/** The store's small-files area: `files`, or what a store written before it calls `archive`. */
export const fileAreaOf = (store: AudioStore): FileArea | undefined =>
  // eslint-disable-next-line @typescript-eslint/no-deprecated -- the one place that reads it
  store.files ?? store.archive;

/** AudioStore.write's options: what each means is said there. */
export interface WriteOptions {
  readonly id?: string;
  readonly entryDurableLater?: boolean;
  readonly bytes?: number;
  readonly contentType?: string;
}

/** The archive's folder under AUDIO_DIR or S3_PREFIX. */
export const ARCHIVE_FOLDER = '.archive';

/**
 * A tree of files in the store's own place, in a folder the audio's names never reach
 * (`.archive/`: a file stem never starts with a dot, and an audio key holds no `/`). Paths are
 * `/`-separated and relative to that folder; the service makes them from times, job ids, file
 * stems, hashes and random names only (archive/archive.ts, provider/store-cache-area.ts), never
 * from a delivery's text. Trouble is a StorageError.
 */
export interface FileArea {
  /** Writes one file whole (never seen partly written), replacing one of the same path. */
  put(path: string, body: Uint8Array): Promise<void>;
  /**
   * Appends to a file, creating it (and its folders) when there is none. Optional: an area that
   * has it keeps the archive in segments, one line per entry appended to a file that exists;
   * one without it (S3, whose objects are written whole) keeps it in batches, the lines of many
   * entries in a new file written by one put (archive/batch-writer.ts). One caller appends to a
   * file at a time; a failed append may have written part of its bytes.
   */
  append?(path: string, body: Uint8Array): Promise<void>;
  /** The file's bytes, or undefined when there is none. */
  get(path: string): Promise<Uint8Array | undefined>;
  /**
   * What `folder` ('' for the top) holds: files by name, folders by name and a trailing `/`;
   * with `deep`, every file below it as a path relative to it (no folders), a folder's files
   * together. Streamed a page at a time (an hour of entry files, as versions before the segments
   * and batches wrote them, may hold millions), in no other promised order; names starting with
   * a dot (temp files) are never listed; a folder that does not exist lists nothing.
   */
  list(folder: string, options?: { readonly deep?: boolean }): AsyncIterable<string>;
  /** Removes `folder` and everything in it; nothing there is not an error. */
  remove(folder: string): Promise<void>;
}
