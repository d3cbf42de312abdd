import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const root = join(__dirname, '..', '..');

/**
 * The repository's files as a clone holds them (tracked, and new ones not ignored), in a temp
 * folder, with this checkout's node_modules: a test that runs commands as a user would (npm
 * start, the README's steps) writes there, never into the checkout.
 */
export function copyOfRepository({ keepCustom = false } = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'aw-fork-'));
  const files = execFileSync('git', ['ls-files', '-co', '--exclude-standard'], {
    cwd: root,
    encoding: 'utf8',
  })
    .split('\n')
    .filter((file) => file !== '');
  for (const file of files) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    cpSync(join(root, file), join(dir, file));
  }
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  if (!keepCustom) rmSync(join(dir, 'src', 'custom'), { recursive: true, force: true });
  return dir;
}
