/**
 * The deepest nesting a delivery may have. The provider's bodies are two levels deep; BullMQ's
 * serialisation recurses and overflows the stack at a few thousand levels, which used to surface
 * as a 503 on every attempt (the provider then retries for 8.5 hours for nothing). 32 leaves room
 * for any extra fields a provider adds, and refuses a hostile body before anything parses it.
 */
export const MAX_JSON_DEPTH = 32;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const OPEN_OBJECT = 0x7b;
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;

/**
 * True when the JSON text nests arrays and objects deeper than `max`. One pass over the bytes,
 * no recursion and no allocation, so it is safe on any input; brackets inside strings do not
 * count. Malformed JSON is JSON.parse's to refuse, not this function's.
 */
export function exceedsJsonDepth(bytes: Uint8Array, max = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i];
    if (inString) {
      if (byte === BACKSLASH) i++;
      else if (byte === QUOTE) inString = false;
    } else if (byte === QUOTE) inString = true;
    else if (byte === OPEN_ARRAY || byte === OPEN_OBJECT) {
      if (++depth > max) return true;
    } else if (byte === CLOSE_ARRAY || byte === CLOSE_OBJECT) depth--;
  }
  return false;
}
