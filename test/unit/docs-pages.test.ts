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
