import { printable } from '../util/printable.js';

/**
 * HTML built from templates whose every interpolation is escaped, unless it is itself `Html`
 * (made by this tag): the inspector's pages show what senders wrote (ids, payloads, reasons),
 * and none of it may become markup. No template engine: the pages are a few server-rendered
 * forms and tables, and this tag is all the escaping they need.
 */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/**
 * A form field's value, sent back as it is when the form is submitted: HTML-escaped only, so a
 * search for an id holding a bidi character searches for that character.
 */
export const verbatim = (text: string) => new Html(escapeHtml(text));

/**
 * A sender's id in running text: isolated (`<bdi>`: its direction cannot reorder what is around
 * it), every unsafe character visible, line breaks too.
 */
export const isolated = (id: string) => new Html(`<bdi>${escapeHtml(printable(id))}</bdi>`);

/** Text made safe for an element's content or a quoted attribute. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => ESCAPES[char] ?? char);
}

type Part = Html | string | number | boolean | null | undefined | readonly Part[];

function render(part: Part): string {
  if (part instanceof Html) return part.text;
  if (Array.isArray(part)) return part.map(render).join('');
  if (part === null || part === undefined || part === false) return '';
  return escapeHtml(printable(String(part), '\n'));
}

/**
 * `html\`<td>${id}</td>\``: `id` escaped, with every character a page would hide or obey (bidi
 * overrides, zero widths, controls: util/printable.ts) shown as `\u{…}`, line breaks kept;
 * arrays joined; null, undefined and false left out.
 */
export function html(strings: TemplateStringsArray, ...parts: readonly Part[]): Html {
  let text = strings[0] ?? '';
  parts.forEach((part, index) => {
    text += render(part) + (strings[index + 1] ?? '');
  });
  return new Html(text);
}
