import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

// scripts/test-prerequisites.js, which `npm test` runs first: on a machine where it cannot install
// what is missing, it must stop at once with one line that says what and how, not let the suite
// fail 15 minutes later. Run here with a PATH that lacks a tool; it never reaches apt-get.
const asRoot = process.getuid?.() === 0;
const folders: string[] = [];

/** A folder every user can read, so that nobody can enter it when root runs these tests. */
function openFolder(prefix: string): string {
  const folder = mkdtempSync(join(tmpdir(), prefix));
  folders.push(folder);
  chmodSync(folder, 0o755);
  return folder;
}

// The check reads no file beside it, so a copy runs as it does in place; the checkout itself may
// be one only root can enter (a mktemp -d or /root clone), where nobody could not load it.
const SCRIPT = join(openFolder('aw-check-'), 'test-prerequisites.js');
copyFileSync(join(__dirname, '..', '..', 'scripts', 'test-prerequisites.js'), SCRIPT);
chmodSync(SCRIPT, 0o644);

afterAll(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

/** One folder holding every command this machine's PATH holds, except those hidden. */
function pathWithout(...hidden: string[]): string {
  const folder = openFolder('aw-path-');
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir === '' || !existsSync(dir)) continue;
    for (const name of readdirSync(dir)) {
      if (hidden.includes(name) || existsSync(join(folder, name))) continue;
      symlinkSync(join(dir, name), join(folder, name));
    }
  }
  return folder;
}

/** The check as a user who is not root (nobody, when these tests run as root). */
function check(path: string, args: string[] = [], { root = false } = {}) {
  return spawnSync(process.execPath, [SCRIPT, ...args], {
    cwd: tmpdir(),
    env: { PATH: path, CHROMIUM_PATH: '/nonexistent/chromium' },
    encoding: 'utf8',
    // A hang bound only: the check asks no package index, so it ends on its own long before.
    timeout: 60_000,
    ...(asRoot && !root ? { uid: 65534, gid: 65534 } : {}),
  });
}

it('not root: one line naming the missing tools and the apt-get command, exit 1, at once', () => {
  const run = check(pathWithout('promtool'));
  expect(run.signal).toBeNull();
  expect(run.status).toBe(1);
  expect(run.stdout).toBe('');
  expect(run.stderr).toMatch(/^npm test: missing [^\n]*\n$/);
  expect(run.stderr).toMatch(/\bpromtool\b/);
  expect(run.stderr).toMatch(/\bchromium \(at \/nonexistent\/chromium\)/);
  expect(run.stderr).toMatch(
    /sudo apt-get install --no-install-recommends [^:;]*\bchromium\b[^:;]*\bprometheus\b/,
  );
  expect(run.stderr).toMatch(/npm run test:quick/);
  expect(run.stderr).not.toMatch(/installing/);
});

it('no apt-get to install with (root or not): the same one line, exit 1', () => {
  const run = check(pathWithout('promtool', 'apt-get'), [], { root: true });
  expect(run.signal).toBeNull();
  expect(run.status).toBe(1);
  expect(run.stderr).toMatch(/^npm test: missing [^\n]*\n$/);
  expect(run.stderr).toMatch(/apt-get install --no-install-recommends [^:;]*\bprometheus\b/);
  expect(run.stderr).not.toMatch(/installing/);
});

it('--quick asks only for what the quick set runs: no Chromium, Prometheus, NATS or RabbitMQ', () => {
  const run = check(pathWithout('promtool', 'prometheus', 'apt-get'), ['--quick']);
  expect(run.stderr).not.toMatch(/chromium|prometheus|promtool|NATS|RabbitMQ/);
  // Silent and successful wherever the few tools it needs (git, curl, redis-server…) are present.
  if (run.stderr === '') expect(run.status).toBe(0);
  else expect(run.stderr).toMatch(/^npm run test:quick: missing [^\n]*\n$/);
});
