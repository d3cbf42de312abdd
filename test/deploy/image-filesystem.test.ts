import { execFile } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, posix, relative } from 'node:path';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { freePort } from '../../harness/private-redis';
import { serviceSettings } from '../helpers/service-settings';
import { spawnService } from '../helpers/spawn-service';
import { withDeadline } from '../../src/util/deadline';

// The Dockerfile, built without a container engine (none runs here, nor in CI): each stage's
// instructions are carried out into a folder of its own standing for the stage's `/` — the build
// context as .dockerignore leaves it, COPY, COPY --from, WORKDIR, ENV, and RUN where it shapes the
// application's tree (npm ci, the build, what is deleted after it, the folders made) — with stages
// built side by side as BuildKit does. What belongs to the base image (apt-get's tini, the npm that
// ships with Node, the user `node`) is not there to emulate and is skipped, by name. Then each ROLE
// starts from the runtime stage's /app as its CMD says, with its ENV, against the tests' Redis, and
// the HEALTHCHECK's own command runs against it.

const run = promisify(execFile);
const root = join(__dirname, '..', '..');
/** A bound that only says "it does not hang", given to each wait of a role's start and stop. */
const HANG_MS = 60_000;
const SECRET = `whsec_${randomUUID().replaceAll('-', '')}`;

interface Instruction {
  readonly op: string;
  readonly args: string;
}

/** The Dockerfile's instructions: continuation lines joined, comments and directives dropped. */
function instructions(text: string): Instruction[] {
  const logical: string[] = [];
  let current = '';
  for (const line of text.split('\n')) {
    if (/^\s*#/.test(line)) continue;
    if (line.endsWith('\\')) current += `${line.slice(0, -1)} `;
    else {
      current += line;
      if (current.trim() !== '') logical.push(current.trim());
      current = '';
    }
  }
  return logical.map((line) => {
    const [op = '', ...rest] = line.split(/\s+/);
    return { op: op.toUpperCase(), args: rest.join(' ') };
  });
}

/** .dockerignore's patterns as a test of a context-relative path (a match of a folder excludes all within). */
function dockerignore(): (path: string) => boolean {
  const patterns = readFileSync(join(root, '.dockerignore'), 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const negated = line.startsWith('!');
      const glob = posix.normalize(line.replace(/^!/, '').replace(/^\//, ''));
      const source = glob
        .split(/(\*\*\/?|\*|\?)/)
        .map((part) =>
          part === '**/' || part === '**'
            ? '(?:.*/)?'
            : part === '*'
              ? '[^/]*'
              : part === '?'
                ? '[^/]'
                : part.replace(/[.+^${}()|[\]\\]/g, '\\$&'),
        )
        .join('');
      return { negated, regex: new RegExp(`^${source}(?:/.*)?$`) };
    });
  return (path) =>
    patterns.reduce(
      (ignored, { negated, regex }) => (regex.test(path) ? !negated : ignored),
      false,
    );
}

interface Stage {
  readonly name: string;
  readonly root: string;
  workdir: string;
  readonly env: Record<string, string>;
  /** Every RUN part, with what the emulation did with it. */
  readonly runs: { command: string; done: string }[];
  healthcheck?: string[];
  cmd?: string[];
}

/** ENV `a=b c=d` or `a b`. */
function parseEnv(args: string): [string, string][] {
  if (!/^\S+=/.test(args)) {
    const [name = '', ...value] = args.split(/\s+/);
    return [[name, value.join(' ')]];
  }
  return [...args.matchAll(/(\w+)=("(?:[^"\\]|\\.)*"|\S*)/g)].map(([, name = '', value = '']) => [
    name,
    value.replace(/^"|"$/g, ''),
  ]);
}

/**
 * Carries out the Dockerfile into `into`: one folder per stage, stages started at once and each
 * waiting for those it copies from. Resolves with the stages by name.
 */
async function build(into: string): Promise<Map<string, Stage>> {
  const ignored = dockerignore();
  const plan: { name: string; steps: Instruction[] }[] = [];
  for (const step of instructions(readFileSync(join(root, 'Dockerfile'), 'utf8'))) {
    if (step.op === 'FROM') {
      const name = /\bAS\s+(\S+)$/i.exec(step.args)?.[1] ?? String(plan.length);
      plan.push({ name, steps: [] });
    } else plan.at(-1)?.steps.push(step);
  }
  const stages = new Map<string, Stage>();
  const built = new Map<string, Promise<Stage>>();
  const copyFromContext = (source: string, target: string) => {
    const walk = (path: string) => {
      if (ignored(path)) return;
      const full = join(root, path);
      if (statSync(full).isDirectory())
        for (const entry of readdirSync(full)) walk(posix.join(path, entry));
      else {
        mkdirSync(dirname(join(target, relative(source, path))), { recursive: true });
        cpSync(full, join(target, relative(source, path) || basename(path)));
      }
    };
    walk(source);
  };
  for (const { name, steps } of plan) {
    const stage: Stage = { name, root: join(into, name), workdir: '/', env: {}, runs: [] };
    mkdirSync(stage.root, { recursive: true });
    stages.set(name, stage);
    const at = (path: string) => join(stage.root, posix.resolve(stage.workdir, path));
    built.set(
      name,
      (async () => {
        for (const { op, args } of steps) {
          if (op === 'WORKDIR') {
            stage.workdir = posix.resolve(stage.workdir, args);
            mkdirSync(at('.'), { recursive: true });
          } else if (op === 'ENV') {
            for (const [key, value] of parseEnv(args)) stage.env[key] = value;
          } else if (op === 'COPY') {
            const from = /^--from=(\S+)\s+/.exec(args)?.[1];
            const parts = args.replace(/^--from=\S+\s+/, '').split(/\s+/);
            const target = parts.pop() ?? '';
            const into = target.endsWith('/') || parts.length > 1;
            for (const source of parts) {
              if (from === undefined) {
                const dest = into ? join(at(target), basename(source)) : at(target);
                if (statSync(join(root, source)).isDirectory()) copyFromContext(source, dest);
                else copyFromContext(source, dirname(dest));
              } else {
                const other = await built.get(from);
                if (other === undefined) throw new Error(`COPY --from=${from}: no such stage`);
                const path = join(other.root, posix.resolve(other.workdir, source));
                cpSync(path, into ? join(at(target), basename(source)) : at(target), {
                  recursive: true,
                  verbatimSymlinks: true,
                });
              }
            }
          } else if (op === 'RUN') {
            for (const command of args.split(/\s+&&\s+/).map((c) => c.trim())) {
              stage.runs.push({ command, done: await runPart(stage, command) });
            }
          } else if (op === 'HEALTHCHECK') {
            stage.healthcheck = JSON.parse(args.replace(/^.*?\bCMD\s+/, '')) as string[];
          } else if (op === 'CMD') {
            stage.cmd = JSON.parse(args) as string[];
          } else if (!['USER', 'EXPOSE', 'ENTRYPOINT', 'ARG'].includes(op)) {
            throw new Error(`the emulation does not know ${op}: teach it`);
          }
        }
        return stage;
      })(),
    );
  }
  await Promise.all(built.values());
  return stages;
}

/** One part of a RUN (between `&&`), carried out in the stage or skipped for a named reason. */
async function runPart(stage: Stage, command: string): Promise<string> {
  const cwd = join(stage.root, stage.workdir);
  const shell = (line: string) =>
    run('sh', ['-c', line], { cwd, env: { ...process.env, ...stage.env }, maxBuffer: 1 << 24 });
  if (/^npm ci\b/.test(command)) {
    if (command.includes('--omit=dev')) {
      // The registry's packages, from this machine's npm cache where it has them.
      await shell(`${command} --prefer-offline`);
      return 'ran';
    }
    // Every package of the same package-lock.json: what `npm ci` made in this checkout.
    symlinkSync(join(root, 'node_modules'), join(cwd, 'node_modules'));
    return "linked the checkout's node_modules";
  }
  if (/^npm run build\b/.test(command)) {
    // The same files without the type check (tsconfig's isolatedModules: no emitted line depends
    // on a type), in a third of the time; `npm run typecheck` checks the same sources in CI.
    await shell(`${command}${command.includes(' -- ') ? '' : ' --'} --noCheck`);
    return 'ran, without its type check';
  }
  if (command === 'npm cache clean --force') return "skipped: it would empty this machine's cache";
  if (/^apt-get\b|^rm -rf \/var\/lib\/apt\//.test(command)) return 'skipped: system packages';
  if (/^rm -rf( \/(usr|opt)\/\S+)+$/.test(command)) return "skipped: the base image's files";
  if (/^chown\b/.test(command)) return 'skipped: the user node is not here';
  // Anything else runs as written, with the image's /app standing for the stage's own.
  const elsewhere = (command.match(/(?<=^|\s)\/\S*/g) ?? []).filter((p) => !/^\/app(\/|$)/.test(p));
  if (elsewhere.length > 0)
    throw new Error(`RUN ${command}: the emulation does not know ${elsewhere.join(' ')}: teach it`);
  await shell(command.replace(/(^|\s)\/app\b/g, `$1${join(stage.root, 'app')}`));
  return 'ran';
}

/** Every file below `dir`, relative to it; node_modules is left out unless asked. */
function files(dir: string, { modules = false } = {}): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter(
    (path) =>
      (modules || !path.split('/').includes('node_modules')) && statSync(join(dir, path)).isFile(),
  );
}

let stages: Map<string, Stage>;
let runtime: Stage;
let app: string;
let folder: string;

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'aw-image-'));
  stages = await build(folder);
  const last = [...stages.values()].at(-1);
  if (last === undefined) throw new Error('the Dockerfile has no stage');
  runtime = last;
  app = join(runtime.root, runtime.workdir);
}, 240_000);

afterAll(() => {
  rmSync(folder, { recursive: true, force: true });
});

it('13. every stage starts from a base image pinned by digest, with how to update it; the context leaves out s3.env', () => {
  const text = readFileSync(join(root, 'Dockerfile'), 'utf8');
  const steps = instructions(text);
  // Build arguments declared before the first FROM, with their defaults: what FROM may name.
  const args = new Map(
    steps
      .slice(
        0,
        steps.findIndex((step) => step.op === 'FROM'),
      )
      .filter((step) => step.op === 'ARG')
      .map((step) => {
        const [name = '', value = ''] = step.args.split('=');
        return [name, value];
      }),
  );
  const bases = steps
    .filter((step) => step.op === 'FROM')
    .map((step) => step.args.split(/\s+/)[0] ?? '')
    .filter((image) => !stages.has(image))
    .map((image) => image.replace(/^\$\{(\w+)\}$/, (_, name: string) => args.get(name) ?? image));
  expect(bases).not.toEqual([]);
  for (const image of bases) expect(image).toMatch(/^[\w./-]+:[\w.-]+@sha256:[0-9a-f]{64}$/);
  expect(text).toMatch(/# To update: `docker buildx imagetools inspect node:24-slim`/);
  // What `npm run local-s3 > s3.env` writes holds an access key: never in the build context.
  const ignored = dockerignore();
  expect(['s3.env', '.env'].filter((path) => !ignored(path))).toEqual([]);
  expect(ignored('.env.example')).toBe(false);
});

it('8. the runtime image holds what it runs and nothing it cannot use: no sources, maps, declarations, dev packages or npm', () => {
  expect(runtime.workdir).toBe('/app');
  for (const needed of ['dist/main.js', 'bin/audio-webhooks.js', 'package.json'])
    expect({ needed, there: existsSync(join(app, needed)) }).toEqual({ needed, there: true });
  const held = files(app);
  expect(held.filter((path) => /^(src|test|scripts|docs)\/|^tsconfig/.test(path))).toEqual([]);
  // Node runs no source map unless told (--enable-source-maps), and these would point at src/,
  // which is not here; declarations are for a compiler.
  expect(held.filter((path) => /\.map$|\.d\.ts$|\.tsbuildinfo$/.test(path))).toEqual([]);
  expect(
    held.filter(
      (path) =>
        path.endsWith('.js') &&
        readFileSync(join(app, path), 'utf8').includes('//# sourceMappingURL='),
    ),
  ).toEqual([]);
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
    devDependencies: Record<string, string>;
  };
  for (const name of Object.keys(manifest.dependencies))
    expect({ name, there: existsSync(join(app, 'node_modules', name, 'package.json')) }).toEqual({
      name,
      there: true,
    });
  expect(
    Object.keys(manifest.devDependencies).filter((name) =>
      existsSync(join(app, 'node_modules', name)),
    ),
  ).toEqual([]);
  // Nothing in the runtime stage runs npm, and its RUN removes the npm (and corepack) the base
  // image ships: the CLI is `node bin/audio-webhooks.js`, not npx.
  expect(runtime.runs.filter(({ command }) => /^(npm|npx|corepack)\b/.test(command))).toEqual([]);
  expect(runtime.runs.map((r) => r.command).join(' ')).toMatch(
    /rm -rf [^&]*\/usr\/local\/lib\/node_modules [^&]*\/usr\/local\/bin\/npm /,
  );
});

describe.each(['web', 'worker', 'all'] as const)('ROLE=%s from the image', (role) => {
  it("starts as the image's CMD says, answers /healthz, and the HEALTHCHECK's command passes; stopped, it fails", async () => {
    const port = await freePort();
    const healthPort = await freePort();
    const env = {
      ...runtime.env,
      // The test's settings over the image's: loopback where the image says every interface (the
      // tests reach only this machine).
      ...serviceSettings({
        PORT: String(port),
        WORKER_HEALTH_PORT: String(healthPort),
        AUDIO_DIR: join(runtime.root, runtime.env.AUDIO_DIR ?? '/app/data/audio'),
        ROLE: role,
        WEBHOOK_SECRETS: SECRET,
      }),
    };
    expect(existsSync(env.AUDIO_DIR ?? '')).toBe(true);
    const [program, ...args] = runtime.cmd ?? [];
    expect(program).toBe('node');
    const service = spawnService(env, { cwd: app, command: [process.execPath, ...args] });
    // Each wait is a hang bound named in its failure (ROLE=web starts a receiver per CPU: a stop
    // asked while they still loaded once hung the primary, and only Jest's timeout said so).
    await withDeadline(service.waitForLog('audio-webhooks started'), HANG_MS, 'the start');

    const ports = { web: [port], worker: [healthPort], all: [port, healthPort] }[role];
    for (const p of ports) {
      const res = await fetch(`http://127.0.0.1:${String(p)}/healthz`, {
        signal: AbortSignal.timeout(HANG_MS),
      });
      expect({ port: p, status: res.status }).toEqual({ port: p, status: 200 });
    }
    const [checker, ...checkArgs] = runtime.healthcheck ?? [];
    expect(checker).toBe('node');
    /** The HEALTHCHECK command's exit code, or why it has none. */
    const check = async () => {
      try {
        // A hang bound: Node's start alone can take seconds on a busy machine.
        await run(process.execPath, checkArgs, {
          env: { PATH: process.env.PATH ?? '', ...env },
          timeout: HANG_MS,
        });
        return 0;
      } catch (error: unknown) {
        const failed = error as { code?: unknown; killed?: boolean };
        return failed.killed === true ? `killed by its ${String(HANG_MS)} ms bound` : failed.code;
      }
    };
    expect(await check()).toBe(0);

    service.child.kill('SIGTERM');
    expect(await withDeadline(service.exited, HANG_MS, 'the graceful stop')).toBe(0);
    expect(await check()).toBe(1);
    // A hang bound, not a timing: two starts of Node and a graceful stop on a busy machine.
  }, 240_000);
});
