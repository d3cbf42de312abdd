import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

/** What the build and the install make; anything else new in the checkout a test left there. */
const MADE_BY_BUILD = /^(node_modules|dist|dist-bench|coverage)\//;
const ROOT = join(__dirname, '..', '..', '..');

/** The checkout's untracked and ignored entries, as `git status` lists them (folders folded). */
export function checkoutLeftovers(): string[] | undefined {
  try {
    return execFileSync('git', ['status', '--porcelain', '--ignored'], {
      cwd: ROOT,
      encoding: 'utf8',
    })
      .split('\n')
      .filter((line) => line.startsWith('?? ') || line.startsWith('!! '))
      .map((line) => line.slice(3))
      .filter((path) => !MADE_BY_BUILD.test(path));
  } catch {
    // Not a git checkout (an unpacked archive): nothing to compare.
    return undefined;
  }
}
