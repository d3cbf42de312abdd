import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { VOICES } from '../../src/sandbox/api/schemas';

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
  // The one loop: wait_for, bounded by the clock (a count of tries runs far past its seconds on
  // a loaded machine), and its message names that bound. Each try first asks whether the
  // process it waits on still runs: one that ended never answers, however long the wait.
  const waitFor =
    /^wait_for\(\) \{ pid=\$1; shift; end=\$\(\(\$\(date \+%s\) \+ (\d+)\)\); while \[ "\$\(date \+%s\)" -lt \$end \]; do kill -0 \$pid .*echo "gave up after (\d+) s: \$\*" >&2; return 1; \}$/m;
  const defined = waitFor.exec(blocks.join(''));
  expect(defined?.[1]).toBeDefined();
  expect(defined?.[2]).toBe(defined?.[1]);
  // A try that never returns would hold wait_for past its bound: each request has its own.
  const requests = [...blocks.join('').matchAll(/^wait_for \$\w+ curl .*$/gm)].map(
    ([line]) => line,
  );
  expect(requests.length).toBeGreaterThan(0);
  expect(requests.filter((line) => !/ (?:-m \d+|--max-time \d+) /.test(line))).toEqual([]);
  // A wait that gives up stops a script run with `set -e` only when nothing follows it with &&.
  expect(blocks.join('').match(/^wait_for .*&&.*$/gm) ?? []).toEqual([]);
  // Any other `until` or `while` loop waits for ever on what never comes (a delivery answered
  // as a duplicate).
  const loops = blocks.map((block) => block.replace(waitFor, ''));
  expect(loops.filter((block) => /\b(?:until|while)\b[^#\n]*;\s*do\b/.test(block))).toEqual([]);
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

it("every voice its shell blocks send is one of the sandbox's (GET /voices), which refuses others", () => {
  const blocks = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1] ?? '');
  // JSON in single quotes ("voice":"x") or in double quotes, escaped (\"voice\":\"x\"), and --voice x.
  const voices = blocks.flatMap((block) => [
    ...[...block.matchAll(/\\?"voice\\?"\s*:\s*\\?"([^"\\]*)\\?"/g)].map((match) => match[1]),
    ...[...block.matchAll(/--voice[ =]'?"?([\w-]+)/g)].map((match) => match[1]),
  ]);
  expect(voices.length).toBeGreaterThan(1);
  const known: readonly string[] = VOICES.map((voice) => voice.id);
  expect(voices.filter((voice) => voice === undefined || !known.includes(voice))).toEqual([]);
});

it('the S3 block starts the service with everything the sandbox demo gives it, in one shell', () => {
  const demo = readme.slice(readme.indexOf('<!-- sandbox-demo'));
  const s3 = readme.slice(readme.indexOf('npm run --silent local-s3 > s3.env'));
  const shell2 = s3.slice(0, s3.indexOf('```'));
  // What the demo's `npm start` needs besides the defaults: each must be set in shell 2 as well.
  for (const name of [
    'WEBHOOK_SECRETS',
    'HOST',
    'CDN_URL',
    'DOWNLOAD_CA_FILE',
    'DOWNLOAD_ALLOW_PRIVATE_IPS',
  ]) {
    expect({ name, inDemo: demo.includes(`${name}=`) }).toEqual({ name, inDemo: true });
    expect({ name, inS3Block: shell2.includes(`${name}=`) }).toEqual({ name, inS3Block: true });
  }
});

describe('the sandbox demo', () => {
  const at = readme.indexOf('<!-- sandbox-demo');
  const demo = /```sh\n([\s\S]*?)```/.exec(readme.slice(at))?.[1] ?? '';

  it('waits only on processes it started itself, each named by the PID it took from $!', () => {
    const started = [...demo.matchAll(/& (\w+)=\$!/g)].map(([, name]) => name);
    expect(started).toEqual(['SANDBOX', 'SERVICE']);
    const waits = [...readme.matchAll(/^wait_for (\S+) /gm)].map(([, pid]) => pid);
    expect(waits.length).toBeGreaterThan(2);
    expect(waits.filter((pid) => !started.map((name) => `$${name}`).includes(pid ?? ''))).toEqual(
      [],
    );
    // The stop step stops those two, not whatever else the reader's shell runs as %1 and %2.
    expect(readme).toContain('kill $SANDBOX $SERVICE;');
    expect(readme).not.toMatch(/kill %\d/);
  });

  it('first checks that nothing holds the ports it is about to take, and says which one is', () => {
    // An earlier run still up would answer the waits and the requests in place of this one.
    const check = demo.indexOf('\nport_free $SANDBOX_PORT $SANDBOX_CDN_PORT $PORT');
    expect(check).toBeGreaterThan(0);
    expect(check).toBeLessThan(demo.indexOf('sandbox &'));
    expect(demo).toMatch(/^port_free\(\) \{.*echo "port \$p is taken.*" >&2; return 1; .*\}$/m);
  });

  it('sets an inspector password long enough for any HOST, and ends with where to look', () => {
    const password = /^export ADMIN_PASSWORD=(?:\$\(openssl rand -hex (\d+)\)|(\S+))/m.exec(demo);
    const length =
      password?.[1] === undefined ? (password?.[2] ?? '').length : 2 * Number(password[1]);
    expect(length).toBeGreaterThanOrEqual(16);
    const end = demo.trimEnd().split('\n').slice(-2);
    expect(end[0]).toMatch(/^node bin\/audio-webhooks\.js inspect hello-\$RUN\b/);
    expect(end[1]).toMatch(
      /^echo ".*http:\/\/127\.0\.0\.1:\$PORT\/admin\/deliveries\b.*\$ADMIN_PASSWORD/,
    );
  });
});
