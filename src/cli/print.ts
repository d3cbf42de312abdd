export type Row = Readonly<Record<string, unknown>>;

export interface Output {
  out(text: string): void;
}

/** `--json`: one JSON array on stdout and nothing else. Otherwise an aligned table. */
export function printRows(
  output: Output,
  rows: readonly Row[],
  columns: readonly string[],
  json: boolean,
): void {
  if (json) {
    output.out(`${JSON.stringify(rows)}\n`);
    return;
  }
  if (rows.length === 0) {
    output.out('(none)\n');
    return;
  }
  const cell = (row: Row, column: string) => {
    const value = row[column];
    if (typeof value === 'string') return value;
    return value === null || value === undefined ? '' : JSON.stringify(value);
  };
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => cell(r, c).length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  output.out(
    `${[line([...columns]), ...rows.map((r) => line(columns.map((c) => cell(r, c))))].join('\n')}\n`,
  );
}
