/**
 * The first `chars` characters of `text`, counted by code point so that a character beyond
 * U+FFFF is never cut in half: how an id of any length (a body may be all id) is shortened
 * where it is shown or kept, each place with its own length.
 */
export function firstChars(text: string, chars: number): string {
  return text.length <= chars ? text : Array.from(text).slice(0, chars).join('');
}
