import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SETTINGS, type SettingSpec } from '../../src/config/settings';
import { PROVIDER_SETTINGS } from '../../src/provider/provider-settings';
import { SANDBOX_SETTINGS, type SandboxSettingSpec } from '../../src/sandbox/sandbox-settings';

// Each setting is declared once (src/config/settings.ts); these documents must say the same.
const root = join(__dirname, '..', '..');
const read = (path: string) => readFileSync(path, 'utf8');
const settings = Object.entries(SETTINGS) as [string, SettingSpec][];
const names = settings.map(([name]) => name);

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

const unquote = (cell: string) => cell.replace(/^`|`$/g, '');
const documentedDefault = (spec: SettingSpec) =>
  spec.default === undefined ? (spec.required ? '— (required)' : '—') : `\`${spec.default}\``;

describe('the settings and their documents agree', () => {
  it("README's configuration table: the same variables, defaults and readers, in order", () => {
    const rows = tableAfter(read(join(root, 'README.md')), '## Configuration');
    const expected = settings.map(([name, spec]) => [
      `\`${name}\``,
      documentedDefault(spec),
      spec.readBy.join(', '),
    ]);
    // On a mismatch, the expected rows are the ones to write.
    expect(rows.map((row) => row.slice(0, 3))).toEqual(expected);
  });

  it('.env.example: every variable once, with its default', () => {
    const lines = read(join(root, '.env.example'))
      .split('\n')
      .map((line) => /^(?:# )?([A-Z][A-Z0-9_]*)=(.*)$/.exec(line))
      .filter((match) => match !== null);
    expect(lines.map((match) => match[1])).toEqual(names);
    for (const [, name, value] of lines) {
      const spec = SETTINGS[name as keyof typeof SETTINGS] as SettingSpec;
      if (spec.required !== true) expect([name, value]).toEqual([name, spec.default ?? '']);
    }
  });

  it("CONTRACT.md: every variable it names is a setting, with CONTRACT's default", () => {
    const contract = join(root, '..', 'shared', 'CONTRACT.md');
    if (!existsSync(contract))
      throw new Error(`${contract} is missing: clone with shared/ beside it`);
    // The sections whose variables this service reads so far.
    const rows = ['## Environment', '## Redis topologies'].flatMap((heading) =>
      tableAfter(read(contract), heading),
    );
    expect(rows.length).toBeGreaterThan(10);
    for (const [nameCell = '', defaultCell = ''] of rows) {
      const rowNames = nameCell.split(' / ').map(unquote);
      const defaults = defaultCell.split(' / ').map(unquote);
      rowNames.forEach((name, i) => {
        expect(names).toContain(name);
        const spec = SETTINGS[name as keyof typeof SETTINGS] as SettingSpec;
        const contractDefault = defaults[i] ?? defaults[0] ?? '';
        if (!contractDefault.startsWith('—'))
          expect([name, spec.default]).toEqual([name, contractDefault]);
      });
    }
  });

  it("CONTRACT.md's Operations: every variable it names is a setting", () => {
    const rows = tableAfter(
      read(join(root, '..', 'shared', 'CONTRACT.md')),
      '## Operations',
      'surface',
    );
    const variables = rows
      .map(([surface = '']) => unquote(surface))
      .filter((surface) => /^[A-Z][A-Z0-9_]+$/.test(surface));
    expect(variables).toEqual(['ADMIN_PASSWORD', 'OTEL_EXPORTER_OTLP_ENDPOINT']);
    for (const name of variables) expect(names).toContain(name);
  });

  describe('the sandbox', () => {
    const sandbox = Object.entries(SANDBOX_SETTINGS) as [string, SandboxSettingSpec][];
    const expected = sandbox.map(([name, spec]) => [
      spec.flag === undefined ? '—' : `\`--${spec.flag}\``,
      `\`${name}\``,
      spec.default === undefined ? '—' : `\`${spec.default}\``,
    ]);

    it("README's flag table: the same flags, variables and defaults, in order", () => {
      const rows = tableAfter(read(join(root, 'README.md')), '## The provider sandbox', 'flag');
      expect(rows.map((row) => row.slice(0, 3))).toEqual(expected);
    });

    it("CONTRACT.md's flag table: every flag and variable it names, with its default", () => {
      const contract = read(join(root, '..', 'shared', 'CONTRACT.md'));
      const rows = tableAfter(contract, '## The provider sandbox', 'flag');
      expect(rows.length).toBeGreaterThan(5);
      const byName = new Map(sandbox);
      for (const [flags = '', variables = '', defaults = ''] of rows) {
        const split = (cell: string) => cell.split(' / ').map(unquote);
        const [flagList, nameList, defaultList] = [split(flags), split(variables), split(defaults)];
        nameList.forEach((name, i) => {
          const spec = byName.get(name);
          expect([name, spec?.flag === undefined ? undefined : `--${spec.flag}`]).toEqual([
            name,
            flagList[i],
          ]);
          const contractDefault = defaultList[i] ?? '';
          // CONTRACT's "first of WEBHOOK_SECRETS" is computed, not a literal default.
          if (contractDefault.startsWith('`') || /^[\w./:-]+$/.test(contractDefault)) {
            expect([name, spec?.default]).toEqual([name, contractDefault]);
          }
        });
      }
    });
  });

  describe('the provider client', () => {
    const provider = Object.entries(PROVIDER_SETTINGS) as [string, SettingSpec][];
    const expected = provider.map(([name, spec]) => [`\`${name}\``, documentedDefault(spec)]);

    it("README's table and CONTRACT's name the same variables with the same defaults", () => {
      const readme = tableAfter(read(join(root, 'README.md')), '## Calling the provider');
      expect(readme.map((row) => row.slice(0, 2))).toEqual(expected);
      const contract = tableAfter(
        read(join(root, '..', 'shared', 'CONTRACT.md')),
        '## The provider client',
      );
      expect(contract.map((row) => row.slice(0, 2))).toEqual(expected);
    });
  });
});
