/**
 * Text from senders (ids, payloads, reasons) made safe to show a person: what a terminal obeys or
 * a page hides rather than shows becomes visible. Those are controls (C0, DEL, C1: `ESC [31m`
 * colours a terminal, `ESC ] 0;…BEL` retitles it), format characters (bidi overrides and
 * isolates, direction marks, zero widths, U+FEFF, U+061C: Unicode's category Cf), line and
 * paragraph separators, and lone surrogates.
 */
const UNSAFE = /[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]/gu;

/** `text` with every unsafe character as a visible `\u{…}` escape; those in `keep` stay as they are. */
export function printable(text: string, keep = ''): string {
  return text.replace(UNSAFE, (char) =>
    keep.includes(char) ? char : `\\u{${(char.codePointAt(0) ?? 0).toString(16)}}`,
  );
}

const unit = (char: string, index: number) =>
  `\\u${char.charCodeAt(index).toString(16).padStart(4, '0')}`;

/**
 * JSON text with every unsafe character but a line break as JSON's own `\uXXXX` escape (a pair
 * for one beyond U+FFFF), so it stays one valid JSON document that reads back the same.
 * JSON.stringify escapes C0 and lone surrogates itself, but writes DEL, C1 and the format
 * characters raw; JSON text is ASCII outside its strings, so each of those is inside a string.
 */
export function jsonPrintable(text: string): string {
  return text.replace(UNSAFE, (char) =>
    char === '\n' ? char : Array.from({ length: char.length }, (_n, i) => unit(char, i)).join(''),
  );
}
