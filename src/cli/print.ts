import { jsonPrintable, printable } from '../util/printable.js';

export type Row = Readonly<Record<string, unknown>>;

export interface Output {
  out(text: string): void;
}

/**
 * The one edge every command writes through (cli/main.ts wraps standard output and standard
 * error in it before any command runs), so no command can forget: every character a terminal
 * would obey or hide (util/printable.ts) becomes `\u{…}`, or in `--json` output JSON's `\uXXXX`,
 * which keeps it one valid JSON document. Line breaks stay: a command's own lines need them, so
 * a command escapes those in a sender's text itself (printable, and every table cell).
 */
export function safeOutput<T extends Output>(output: T, json: boolean): T {
  return {
    ...output,
    out: (text: string) => {
      output.out(json ? jsonPrintable(text) : printable(text, '\n'));
    },
  };
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
  // A cell is one line: a line break or tab in a value is escaped too.
  const cell = (row: Row, column: string) => {
    const value = row[column];
    if (typeof value === 'string') return printable(value);
    return value === null || value === undefined ? '' : printable(JSON.stringify(value));
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
