import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { COMMANDS, USAGE } from '../../src/cli/usage';

// What every page a reader follows must agree on: how the CLI is run, and that each page stands
// alone (describes what it promises itself, naming no file the repository does not hold).
const root = join(__dirname, '..', '..');

/** Every Markdown page the repository holds (the READMEs, docs/, deploy/, src/custom/…). */
const pages = execFileSync('git', ['ls-files', '*.md'], { cwd: root, encoding: 'utf8' })
  .split('\n')
  .filter((page) => page !== '');
const text = (page: string) => readFileSync(join(root, page), 'utf8');

it('finds the pages', () => {
  expect(pages).toEqual(expect.arrayContaining(['README.md', 'docs/operations.md']));
});

it('no page, and not the CLI usage text, runs the CLI through an npx that may fetch it', () => {
  // Without --no-install, npx runs whatever is published under the name when no local copy is
  // found: the advice everywhere is the clone's own file, or npx --no-install inside the clone.
  const sources = [
    ...pages.map((page) => ({ page, body: text(page) })),
    { page: 'USAGE', body: USAGE },
  ];
  const fetching = sources.flatMap(({ page, body }) =>
    [...body.matchAll(/\bnpx\b[^`\n]*?\baudio-webhooks\b/g)]
      .map(([found]) => found)
      .filter((found) => !/--no-install\b/.test(found))
      .map((found) => `${page}: ${found}`),
  );
  expect(fetching).toEqual([]);
});

it('every command a page gives to run calls the CLI as `node bin/audio-webhooks.js <command>`', () => {
  // A bare `audio-webhooks <command>` is on no PATH after a clone (nor in the image).
  const commands = Object.keys(COMMANDS).join('|');
  const bare = new RegExp(`(?:\`|^\\$ )audio-webhooks (?:${commands})\\b[^\`\\n]*`, 'gm');
  const found = pages.flatMap((page) =>
    [...text(page).matchAll(bare)].map(([line]) => `${page}: ${line}`),
  );
  expect(found).toEqual([]);
});

it('no page sends the reader to a file the repository does not hold (the outside contract)', () => {
  const naming = pages.filter((page) => /\bCONTRACT\b|\.\.\/shared\b/.test(text(page)));
  expect(naming).toEqual([]);
});

describe("docs/operations.md describes the delivery inspector's whole surface itself", () => {
  const operations = text('docs/operations.md');
  const apiRoutes = readFileSync(join(root, 'src', 'inspector', 'api-routes.ts'), 'utf8');

  it('every route the API serves, and the page, the audio and the CLI command', () => {
    // Read from the code, so that a route added later and left out of the page fails here.
    const served = [...apiRoutes.matchAll(/router\.(get|post)\(`\$\{INSPECTOR_API\}([^`]+)`/g)].map(
      ([, method = '', path = '']) =>
        `${method.toUpperCase()} /admin/api${path.replace(/:(\w+)/g, '<$1>')}`,
    );
    expect(served.length).toBeGreaterThanOrEqual(6);
    const routes = [
      ...served,
      'GET /admin/deliveries',
      'GET /admin/deliveries/<event>/<id>',
      'GET /admin/api/deliveries/<event>/<id>/audio',
      'node bin/audio-webhooks.js inspect <id> [--event E] [--json]',
    ];
    expect(routes.filter((route) => !operations.includes(`\`${route}\``))).toEqual([]);
  });

  it('every query parameter of the list, and every field of its answers', () => {
    const parameters = [...apiRoutes.matchAll(/(?:one|time)\(query, '(\w+)'\)/g)].map(
      ([, name]) => name ?? '',
    );
    expect(parameters).toEqual(expect.arrayContaining(['id', 'event', 'state', 'limit', 'cursor']));
    const named = (name: string) => operations.includes(`\`${name}\``);
    expect([...parameters, 'since', 'until', 'destination'].filter((name) => !named(name))).toEqual(
      [],
    );
    const fields = [
      ...['deliveries', 'next_cursor', 'event', 'id', 'received_at', 'state', 'attempts'],
      ...['duplicates', 'forwards', 'payload', 'stored', 'timeline', 'trace_id'],
      ...['destination', 'last_error', 'detail'],
    ];
    expect(fields.filter((name) => !operations.includes(`"${name}"`) && !named(name))).toEqual([]);
  });

  it('the rules of every POST (read-only, Origin) and how long a delivery can be found', () => {
    for (const rule of ['ADMIN_READ_ONLY', 'Origin', 'ARCHIVE_RETENTION_HOURS', '421', '403'])
      expect({ rule, named: operations.includes(rule) }).toEqual({ rule, named: true });
  });
});
