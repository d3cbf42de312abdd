/**
 * The text of a top-level member of a JSON object, as written: `jsonMember('{"a":1e20}', 'a')`
 * is `1e20`, where JSON.parse and JSON.stringify would give 21 digits. Forwarding puts the
 * delivery's `data` in its message as the provider sent it; a re-serialised copy may be
 * several times the delivery. Hand-written because neither JSON.parse
 * (its reviver sees the source of primitives only, from Node 21) nor a streaming parser on npm
 * gives a value's source span for less than this one pass over the text.
 *
 * `text` must be valid JSON (the receiver parsed it); the last member of that name wins, as in
 * JSON.parse. Undefined when the text is not an object or has no such member.
 */
export function jsonMember(text: string, key: string): string | undefined {
  let found: string | undefined;
  let i = skipSpace(text, 0);
  if (text[i] !== '{') return undefined;
  i = skipSpace(text, i + 1);
  while (i < text.length && text[i] !== '}') {
    const nameEnd = endOfValue(text, i);
    const name = JSON.parse(text.slice(i, nameEnd)) as string;
    const start = skipSpace(text, skipSpace(text, nameEnd) + 1);
    const end = endOfValue(text, start);
    if (name === key) found = text.slice(start, end);
    i = skipSpace(text, end);
    if (text[i] === ',') i = skipSpace(text, i + 1);
  }
  return found;
}

function skipSpace(text: string, from: number): number {
  let i = from;
  while (
    i < text.length &&
    (text[i] === ' ' || text[i] === '\n' || text[i] === '\r' || text[i] === '\t')
  )
    i++;
  return i;
}

/** Where the value starting at `from` ends: one pass, brackets inside strings not counted. */
function endOfValue(text: string, from: number): number {
  let depth = 0;
  let inString = false;
  for (let i = from; i < text.length; i++) {
    const char = text[i];
    if (inString) {
      if (char === '\\') i++;
      else if (char === '"') {
        inString = false;
        if (depth === 0) return i + 1;
      }
    } else if (char === '"') inString = true;
    else if (char === '{' || char === '[') depth++;
    else if (char === '}' || char === ']') {
      if (depth === 0) return i;
      if (--depth === 0) return i + 1;
    } else if (
      depth === 0 &&
      (char === ',' || char === ' ' || char === '\n' || char === '\r' || char === '\t')
    ) {
      return i;
    }
  }
  return text.length;
}
