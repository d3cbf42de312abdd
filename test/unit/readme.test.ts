import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

// The README is an entry page: its first screen runs the service and the tests, it stays short,
// and every page it links to exists.
const root = join(__dirname, '..', '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');

it('at most 300 lines, with the two commands on its first screen', () => {
  const lines = readme.split('\n');
  expect(lines.length).toBeLessThanOrEqual(300);
  const first = lines.slice(0, 25).join('\n');
  expect(first).toMatch(/npm start/);
  expect(first).toMatch(/npm test/);
});

it.each(['README.md', ...['extending', 'replay', 'storage'].map((page) => `docs/${page}.md`)])(
  '%s links only to files that exist',
  (page) => {
    const text = readFileSync(join(root, page), 'utf8');
    const missing = [...text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)]
      .map((match) => match[1] ?? '')
      .filter((target) => !/^[a-z]+:/.test(target))
      .filter((target) => !existsSync(join(root, dirname(page), target)));
    expect(missing).toEqual([]);
  },
);
