import { createHash } from 'node:crypto';

/** The longest record that is the id itself: a tenth of AWS's 2 KB of user metadata in all. */
const MAX_PLAIN = 200;

/**
 * How an object records in a header which item it holds (S3's `x-amz-meta-item-id`): the id
 * percent-encoded when that is at most 200 characters, else `sha256:` and the SHA-256 hex of the
 * id's UTF-8. The receiver accepts any well-formed Unicode id up to its 1 MiB body, and a header
 * carries neither non-ASCII nor controls, nor length: Ceph answers 400 to a 20,000-character
 * one, AWS to 2 KB of user metadata. Percent-encoding never writes `:`, so the two forms never
 * meet; the id itself is in the item's metadata file. An id that is not well-formed (a lone
 * surrogate, which encodeURIComponent refuses) is hashed as its UTF-8 (with U+FFFD).
 */
export function itemRecord(id: string): string {
  const encoded = percentEncoded(id);
  if (encoded !== undefined && encoded.length <= MAX_PLAIN) return encoded;
  return `sha256:${createHash('sha256').update(id, 'utf8').digest('hex')}`;
}

/**
 * True when `recorded` is this id's record: the current form, or the one written before records
 * were bounded (the whole id percent-encoded), so an item stored then is still its own.
 */
export function recordsItem(recorded: string, id: string): boolean {
  return recorded === itemRecord(id) || recorded === percentEncoded(id);
}

function percentEncoded(id: string): string | undefined {
  try {
    return encodeURIComponent(id);
  } catch {
    return undefined;
  }
}
