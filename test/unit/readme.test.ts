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

it('its shell blocks wait only through a bounded wait, which names what it waited for', () => {
  const blocks = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1] ?? '');
  // An `until` loop waits for ever on what never comes (a delivery answered as a duplicate).
  expect(blocks.filter((block) => /\b(?:until|while)\b[^#\n]*;\s*do\b/.test(block))).toEqual([]);
  expect(blocks.join('')).toMatch(
    /^wait_for\(\) \{.*echo "gave up after \d+ s: \$\*" >&2; return 1; \}$/m,
  );
});

it('every `cp` in the READMEs and docs copies a file that exists into a folder that exists', () => {
  // src/custom/ ships with its README, so a fresh clone has the folder the copies go to.
  const pages = ['README.md', 'src/custom/README.md', 'docs/extending.md'];
  const copies = pages.flatMap((page) =>
    [...readFileSync(join(root, page), 'utf8').matchAll(/^cp (\S+) (\S+)$/gm)].map(
      ([, from = '', to = '']) => ({ from, to }),
    ),
  );
  expect(copies).toContainEqual({ from: 'src/examples/events.ts', to: 'src/custom/events.ts' });
  expect(
    copies.filter(
      ({ from, to }) => !existsSync(join(root, from)) || !existsSync(join(root, dirname(to))),
    ),
  ).toEqual([]);
});
