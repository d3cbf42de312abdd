import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

// scripts/build-current.js (what npm start, npm ci and the tests' global setup run) keeps dist/
// to what src/ holds: a module left at a path whose source moved would still load there, and a
// test naming the old path would pass here and fail on a fresh clone.
const root = join(__dirname, '..', '..');
const dist = join(root, 'dist');

it('removes built files whose source is gone, and the folders left empty; keeps the rest', () => {
  const orphanDir = join(dist, 'moved-away-folder');
  mkdirSync(orphanDir, { recursive: true });
  const orphans = [
    join(orphanDir, 'gone.js'),
    join(orphanDir, 'gone.js.map'),
    join(dist, 'storage', 'renamed-store.js'),
    join(dist, 'storage', 'renamed-store.d.ts'),
  ];
  for (const file of orphans) writeFileSync(file, '');
  execFileSync(process.execPath, [join(root, 'scripts', 'build-current.js')], { cwd: root });
  expect(orphans.filter((file) => existsSync(file))).toEqual([]);
  expect(existsSync(orphanDir)).toBe(false);
  expect(existsSync(join(dist, 'main.js'))).toBe(true);
  expect(existsSync(join(dist, 'storage', 'local', 'local-audio-store.js'))).toBe(true);
  expect(existsSync(join(dist, '.tsbuildinfo'))).toBe(true);
});
