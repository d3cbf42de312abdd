import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SettingSpec } from '../../src/config/settings';
import { SETTINGS } from '../../src/settings';
import { PROVIDER_SETTINGS } from '../../src/provider/provider-settings';
import { SANDBOX_SETTINGS, type SandboxSettingSpec } from '../../src/sandbox/sandbox-settings';

// Each setting is declared once (src/settings.ts); these documents must say the same.
const root = join(__dirname, '..', '..');
const read = (path: string) => readFileSync(path, 'utf8');
const settings = Object.entries(SETTINGS) as [string, SettingSpec][];

/** Cells of a Markdown table row; `\|` inside a cell is not a separator. */
const cells = (row: string) =>
  row
    .trim()
    .replace(/^\||\|$/g, '')
    .split(/(?<!\\)\|/)
    .map((cell) => cell.trim());

/** The rows of the first table after `heading` whose header starts with `| <first>`. */
function tableAfter(text: string, heading: string, first = 'variable'): string[][] {
  const from = text.indexOf(heading);
  if (from < 0) throw new Error(`no "${heading}"`);
  const lines = text.slice(from).split('\n');
  const start = lines.findIndex((line) => new RegExp(`^\\| *${first} *\\|`).test(line));
  const rows: string[][] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(cells(line));
  }
  return rows;
}

const documentedDefault = (spec: SettingSpec) =>
  spec.default === undefined ? (spec.required ? '— (required)' : '—') : `\`${spec.default}\``;

describe('the settings and their documents agree', () => {
  it("docs/configuration.md's table: the same variables, defaults and readers, in order", () => {
    const rows = tableAfter(read(join(root, 'docs', 'configuration.md')), '# Configuration');
    const expected = settings.map(([name, spec]) => [
      `\`${name}\``,
      documentedDefault(spec),
      spec.readBy.join(', '),
    ]);
    // On a mismatch, the expected rows are the ones to write.
    expect(rows.map((row) => row.slice(0, 3))).toEqual(expected);
  });

  it('.env.example: every variable every role reads, once, with its default and its readers', () => {
    const tables = [SETTINGS, PROVIDER_SETTINGS, SANDBOX_SETTINGS].flatMap(
      (table) => Object.entries(table) as [string, SettingSpec][],
    );
    const lines = read(join(root, '.env.example')).split('\n');
    const found = lines.flatMap((line, at) => {
      const match = /^(?:# )?([A-Z][A-Z0-9_]*)=(.*)$/.exec(line);
      if (match === null) return [];
      const readers = /\(read by ([a-z, ]+)\)$/.exec(lines[at - 1] ?? '')?.[1];
      return [{ name: match[1], value: match[2], readers }];
    });
    // On a mismatch, the expected entries are the ones to write.
    expect(found).toEqual(
      tables.map(([name, spec]) => ({
        name,
        value: spec.required === true ? expect.any(String) : (spec.default ?? ''),
        readers: spec.readBy.join(', '),
      })),
    );
  });

  it('nothing in the repository reads outside it: no path to a sibling of the clone', () => {
    // Built from parts so that this test does not find itself.
    const sibling = ['..', 'shar' + 'ed'].join('/');
    const quoted = ["'..'", "'shared'"].join(', ');
    const tracked = execFileSync('git', ['ls-files'], { cwd: root, encoding: 'utf8' })
      .split('\n')
      .filter((path) => path !== '' && existsSync(join(root, path)) && !path.endsWith('.png'));
    const readers = tracked.filter((path) => {
      const text = read(join(root, path));
      return text.includes(sibling) || text.includes(quoted);
    });
    expect(readers).toEqual([]);
  });

  describe('the sandbox', () => {
    const sandbox = Object.entries(SANDBOX_SETTINGS) as [string, SandboxSettingSpec][];
    const expected = sandbox.map(([name, spec]) => [
      spec.flag === undefined ? '—' : `\`--${spec.flag}\``,
      `\`${name}\``,
      spec.default === undefined ? '—' : `\`${spec.default}\``,
    ]);

    it("docs/sandbox.md's flag table: the same flags, variables and defaults, in order", () => {
      const rows = tableAfter(
        read(join(root, 'docs', 'sandbox.md')),
        '# The provider sandbox',
        'flag',
      );
      expect(rows.map((row) => row.slice(0, 3))).toEqual(expected);
    });
  });

  describe('the provider client', () => {
    const provider = Object.entries(PROVIDER_SETTINGS) as [string, SettingSpec][];
    const expected = provider.map(([name, spec]) => [`\`${name}\``, documentedDefault(spec)]);

    it("docs/provider-client.md's table names the same variables with the same defaults", () => {
      const readme = tableAfter(
        read(join(root, 'docs', 'provider-client.md')),
        '# Calling the provider',
      );
      expect(readme.map((row) => row.slice(0, 2))).toEqual(expected);
    });
  });
});
