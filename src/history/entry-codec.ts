import { createHash } from 'node:crypto';

/**
 * What an entry (failure log, revocation registry) keeps of a delivery, and how it reads back.
 * The queue's Redis is noeviction and a handled delivery may leave at most 2 KB in it, its
 * completed job included, while an id or a `data` may be as long as the body. So an entry is
 * bounded whatever the body (docs/capacity.md, "What a handled delivery leaves"):
 *
 * - an id whose JSON text is at most ID_KEPT_BYTES is the entry's key (hash field, sorted-set
 *   member), and the entry does not repeat it; a longer one is keyed by its SHA-256
 *   (`sha256:<base64url>`, entryField) and the entry keeps its first characters, with
 *   `id_truncated: true`;
 * - `data` is kept as the provider wrote it (its JSON text, spliced in, never re-serialised:
 *   JSON.stringify writes 1e20 as 21 digits) when the whole entry fits in ENTRY_MAX_BYTES;
 *   otherwise `payload` is null, with `payload_bytes` (its UTF-8 length). The archive holds
 *   every delivery whole (`replay`).
 *
 * Read back (decodeEntry), every entry has the same shape, `payload_truncated: true` marking
 * a payload not kept, whichever version wrote it: earlier versions kept the whole id and the
 * whole `data` re-serialised; their id is cut as a new entry's would be.
 */

/**
 * An id kept whole: its JSON text fits in this many bytes. Redis keeps a hash or sorted set of
 * members this short in its compact encoding (`*-max-listpack-value` is 64 by default).
 */
export const ID_KEPT_BYTES = 64;

/**
 * The longest entry, in bytes of JSON. A completed job takes most of a handled delivery's 2 KB
 * (more while it keeps a short body); this is what an entry may take of the rest, beside its key.
 */
export const ENTRY_MAX_BYTES = 192;

/** The data the entry keeps: the delivery's `data`, parsed, as it was written. */
export type KeptPayload = { readonly id: string } & Readonly<Record<string, unknown>>;

/** An entry as it reads back: `Time` names its time field (`received_at`, `revoked_at`). */
export type KeptEntry<Time extends string> = {
  /** The id, or its first characters when `id_truncated`. */
  readonly id: string;
  readonly id_truncated?: true;
} & { readonly [K in Time]: string } & {
  /** The delivery's `data`; null when it was too long to keep (see `payload_bytes`). */
  readonly payload: KeptPayload | null;
  /** The UTF-8 length of the `data` not kept. */
  readonly payload_bytes?: number;
  readonly payload_truncated?: true;
};

/** The shape of entryField's digest: an id of that shape is hashed too, so no two ids share a key. */
const DIGEST = /^sha256:[A-Za-z0-9_-]{43}$/;

/**
 * The entry's name in Redis (hash field, sorted-set member): the id itself when it is kept
 * whole, else `sha256:` and the base64url SHA-256 of its UTF-8. Written and read alike.
 */
export function entryField(id: string): string {
  return keptWhole(id) && !DIGEST.test(id)
    ? id
    : `sha256:${createHash('sha256').update(id, 'utf8').digest('base64url')}`;
}

/**
 * An entry's JSON text, stored under entryField(id): `{"id"?, "id_truncated"?, <time>,
 * "payload", "payload_bytes"?}`. `dataText` is the delivery's `data` as the provider wrote it.
 */
export function encodeEntry(
  id: string,
  time: readonly [name: string, value: string],
  dataText: string,
): string {
  const shown = shownId(id);
  const named =
    entryField(id) === id
      ? ''
      : `"id":${JSON.stringify(shown)},${shown.length < id.length ? '"id_truncated":true,' : ''}`;
  const head = `{${named}${JSON.stringify(time[0])}:${JSON.stringify(time[1])},"payload":`;
  // Measured in UTF-16 units first: a body of megabytes is not counted byte by byte.
  if (head.length + dataText.length < ENTRY_MAX_BYTES) {
    const whole = `${head}${dataText}}`;
    if (Buffer.byteLength(whole) <= ENTRY_MAX_BYTES && isObjectText(dataText)) return whole;
  }
  return `${head}null,"payload_bytes":${Buffer.byteLength(dataText)}}`;
}

/**
 * The entry stored under `key`, whichever version wrote it; its time field is named `time`.
 */
export function decodeEntry<Time extends string>(
  text: string,
  key: string,
  time: Time,
): KeptEntry<Time> {
  const record: unknown = JSON.parse(text);
  if (!isObject(record)) throw new Error(`not a record: ${text.slice(0, 100)}`);
  const id = typeof record.id === 'string' ? record.id : key;
  const shown = shownId(id);
  const at = record[time];
  const { payload } = record;
  const kept = isObject(payload) && typeof payload.id === 'string';
  const bytes = record.payload_bytes;
  return {
    id: shown,
    ...(shown.length < id.length || record.id_truncated === true ? { id_truncated: true } : {}),
    [time]: typeof at === 'string' ? at : '',
    payload: kept ? (payload as KeptPayload) : null,
    ...(kept || typeof bytes !== 'number' ? {} : { payload_bytes: bytes, payload_truncated: true }),
  } as KeptEntry<Time>;
}

/** Whether the id's JSON text (without its quotes) fits in ID_KEPT_BYTES. */
function keptWhole(id: string): boolean {
  // A UTF-16 unit is at least one byte of UTF-8: a longer id cannot fit.
  return id.length <= ID_KEPT_BYTES && Buffer.byteLength(JSON.stringify(id)) - 2 <= ID_KEPT_BYTES;
}

/** The id whole, or its first characters whose JSON text fits in ID_KEPT_BYTES. */
function shownId(id: string): string {
  if (keptWhole(id)) return id;
  let bytes = 0;
  let end = 0;
  for (const char of id) {
    bytes += Buffer.byteLength(JSON.stringify(char)) - 2;
    if (bytes > ID_KEPT_BYTES) break;
    end += char.length;
  }
  return id.slice(0, end);
}

function isObjectText(text: string): boolean {
  try {
    return isObject(JSON.parse(text));
  } catch {
    return false; // not JSON: counted, not kept
  }
}

function isObject(value: unknown): value is Readonly<Record<string, unknown>> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
