import type { Random } from './prng.js';

/**
 * `data.id`s as a provider may send them: plain ones, printable ASCII that is unsafe as a file
 * name or a header (`/`, `..`, quotes, `%`), any Unicode (astral, right-to-left, combining marks,
 * zero-width and control characters, private use, noncharacters) and long ones. The sandbox takes
 * ids of at most 256 UTF-16 units (src/sandbox/api/schemas.ts), so "long" is that long; never a
 * lone surrogate, which the receiver rightly refuses as not well-formed.
 */
const SCRIPTS: readonly (readonly [number, number])[] = [
  [0x20, 0x7e], // ASCII
  [0x00, 0x1f], // C0 controls, NUL included
  [0x7f, 0x9f], // DEL, C1 controls
  [0xa0, 0x24f], // Latin-1, Latin extended
  [0x300, 0x36f], // combining marks
  [0x370, 0x3ff], // Greek
  [0x400, 0x4ff], // Cyrillic
  [0x590, 0x6ff], // Hebrew, Arabic (right to left)
  [0x200b, 0x200f], // zero-width space, joiners, direction marks
  [0x2028, 0x202e], // line and paragraph separators, embeddings
  [0x3040, 0x30ff], // kana
  [0x4e00, 0x9fff], // CJK
  [0xe000, 0xf8ff], // private use
  [0xfdd0, 0xfdef], // noncharacters
  [0xfff0, 0xfffd], // specials, the replacement character
  [0x1f300, 0x1faff], // emoji (astral: a surrogate pair each)
  [0x10000, 0x1007f], // Linear B
  [0xe0000, 0xe007f], // tags
  [0x10fff0, 0x10fffd], // the last plane
];
const UNSAFE_ASCII = ['/', '..', ' ', '%2F', '"', "'", '\\', '?', '#', '*', ':', '~', '.', '\t'];

export type IdKind = 'plain' | 'ascii' | 'unicode' | 'long';

function codePoint(random: Random): string {
  const [low, high] = random.pick(SCRIPTS);
  return String.fromCodePoint(random.int(low, high));
}

/** Code points until `units` UTF-16 units, never past them (an astral one takes two). */
function unicodeOf(random: Random, units: number): string {
  let text = '';
  for (let guard = 0; text.length < units && guard < units * 4; guard += 1) {
    const next = codePoint(random);
    if (text.length + next.length <= units) text += next;
  }
  return text;
}

/** One id of the given kind; `serial` keeps plain ones apart. */
export function drawId(random: Random, kind: IdKind, serial: number): string {
  switch (kind) {
    case 'plain':
      return `soak-${serial}-${random.int(0, 0xffffff).toString(16)}`;
    case 'ascii': {
      let text = '';
      for (let i = random.int(1, 6); i > 0; i -= 1)
        text += random.chance(0.5) ? random.pick(UNSAFE_ASCII) : String(random.int(0, 999));
      return text;
    }
    case 'unicode':
      return unicodeOf(random, random.int(1, 24));
    case 'long':
      return unicodeOf(random, random.chance(0.5) ? 256 : random.int(129, 256));
  }
}

/** Ids that are new: a drawn id already used is drawn again (a short one can repeat). */
export function createIdSource(random: Random) {
  const used = new Set<string>();
  let serial = 0;
  return (kind?: IdKind): string => {
    const chosen =
      kind ?? random.weighted<IdKind>({ plain: 0.35, ascii: 0.15, unicode: 0.35, long: 0.15 });
    serial += 1;
    for (let attempt = 0; attempt < 20; attempt += 1) {
      const id = drawId(random, chosen, serial);
      if (id !== '' && !used.has(id)) {
        used.add(id);
        return id;
      }
    }
    // Twenty repeats in a row: only a tiny kind does that; a plain id always is new.
    const id = drawId(random, 'plain', serial);
    used.add(id);
    return id;
  };
}
