import { printRows, safeOutput } from '../../src/cli/print';

function printed(rows: Record<string, unknown>[], columns: string[], json: boolean): string {
  let text = '';
  printRows({ out: (t) => (text += t) }, rows, columns, json);
  return text;
}

describe('printRows', () => {
  const rows = [
    { id: 'a', reason: 'a longer reason', payload: { n: 1 }, extra: 'kept in JSON' },
    { id: 'bbbb', reason: null, payload: undefined },
  ];

  it('--json: one array of the whole rows on one line, nothing else', () => {
    const text = printed(rows, ['id'], true);
    expect(text.endsWith('\n')).toBe(true);
    expect(text.trimEnd().includes('\n')).toBe(false);
    expect(JSON.parse(text)).toEqual([
      { id: 'a', reason: 'a longer reason', payload: { n: 1 }, extra: 'kept in JSON' },
      { id: 'bbbb', reason: null },
    ]);
  });

  it('a table: the named columns aligned, objects as JSON, nothing for null', () => {
    expect(printed(rows, ['id', 'reason', 'payload'], false)).toBe(
      ['id    reason           payload', 'a     a longer reason  {"n":1}', 'bbbb', ''].join('\n'),
    );
  });

  it('says (none) for no rows, and [] with --json', () => {
    expect(printed([], ['id'], false)).toBe('(none)\n');
    expect(printed([], ['id'], true)).toBe('[]\n');
  });
});

describe("what a terminal would obey or hide, in every command's output", () => {
  // ESC ] 0;…BEL retitles the terminal, ESC [31m colours it, U+202E reverses what follows;
  // then C1 (U+009B, a one-byte CSI), DEL, zero widths, U+FEFF, U+061C, an isolate, a lone surrogate.
  const sly =
    'k\u001B]0;owned\u0007\u001B[31m\u202Egnp.exe\u009B\u007F\u200B\u200D\u2060\uFEFF\u061C\u2066\uD800';
  const written = (json: boolean, text: string) => {
    let out = '';
    safeOutput({ out: (t) => (out += t) }, json).out(text);
    return out;
  };

  it('as text: each a visible \\u{…} escape; the lines a command writes keep their breaks', () => {
    const out = written(false, `id ${sly}\tx\r\n`);
    expect(out).toBe(
      'id k\\u{1b}]0;owned\\u{7}\\u{1b}[31m\\u{202e}gnp.exe\\u{9b}\\u{7f}\\u{200b}\\u{200d}\\u{2060}\\u{feff}\\u{61c}\\u{2066}\\u{d800}\\u{9}x\\u{d}\n',
    );
    expect(out.slice(0, -1)).toMatch(/^[\x20-\x7E]*$/);
  });

  it('with --json: one valid JSON document that reads back the same, all of it printable ASCII', () => {
    const out = written(true, `${JSON.stringify([{ id: sly, payload: { note: sly } }])}\n`);
    expect(out.slice(0, -1)).toMatch(/^[\x20-\x7E]*$/);
    expect(JSON.parse(out)).toEqual([{ id: sly, payload: { note: sly } }]);
  });

  it('a table cell is one line: its own breaks and tabs are escaped too', () => {
    const text = printed([{ id: 'a\nb\tc', note: { n: 'x\u202Ey' } }], ['id', 'note'], false);
    expect(text).toBe('id             note\na\\u{a}b\\u{9}c  {"n":"x\\u{202e}y"}\n');
  });

  it('characters that are only unusual are kept: accents, other scripts, emoji', () => {
    expect(written(false, 'é ü 日本 \u05D0 😀\n')).toBe('é ü 日本 \u05D0 😀\n');
  });
});
