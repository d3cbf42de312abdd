import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = join(__dirname, '..', '..');

it('docker-compose.yml has no ${VAR:-} with an empty default', () => {
  const text = readFileSync(join(root, 'docker-compose.yml'), 'utf8');
  expect(text).not.toMatch(/\$\{\w+:-\}/);
});

it('podman-compose 1.0.3 (Debian 12) passes every variable through, none literally', async () => {
  // --dry-run prints the podman commands without an engine; .ci/run installs podman-compose.
  const { stdout, stderr } = await run(
    'podman-compose',
    ['--dry-run', '--podman-path', '/bin/true', 'up', '--no-build'],
    { cwd: root, env: { PATH: process.env.PATH ?? '', WEBHOOK_SECRETS: 'whsec_real' } },
  );
  const output = stdout + stderr;
  const envArgs = [...output.matchAll(/-e (\S+)/g)].map((match) => match[1]);
  expect(envArgs).toEqual(expect.arrayContaining(['WEBHOOK_SECRETS=whsec_real', 'CDN_URL']));
  expect(envArgs.filter((arg) => arg?.includes('${'))).toEqual([]);
});
