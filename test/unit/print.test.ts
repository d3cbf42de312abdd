import { printRows } from '../../src/cli/print';

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
