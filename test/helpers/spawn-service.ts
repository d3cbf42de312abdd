import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface ServiceProcess {
  readonly child: ChildProcess;
  /** Every JSON log line so far. */
  readonly logs: Record<string, unknown>[];
  /** Resolves with the first log line (past or future) whose msg matches. */
  waitForLog(msg: string | RegExp): Promise<Record<string, unknown>>;
  /**
   * Resolves with the pids of the receiving processes, in the order they started, once `count`
   * of them (default 1) listen and each that started has its web connection to Redis up, as /readyz says before a balancer sends: "started"
   * is logged once the port listens, and a delivery sent before the connection is up gets 503.
   */
  receiving(count?: number): Promise<number[]>;
  /** Resolves once `condition` holds, checked now and after every log line. */
  until(condition: () => boolean): Promise<void>;
  /** Resolves with the exit code. */
  readonly exited: Promise<number | null>;
  /** Everything written to standard error so far. */
  stderr(): string;
}

const MAIN = join(__dirname, '..', '..', 'dist', 'main.js');

/**
 * Every child spawned here that has not exited yet, and whether it was spawned by a test (or its
 * beforeEach) rather than by a beforeAll: a test that fails before its own stop leaves nothing
 * running, because the hooks below stop what it spawned.
 */
const live = new Map<
  ChildProcess,
  { readonly exited: Promise<unknown>; readonly inTest: boolean; readonly group: boolean }
>();
let inTest = false;

/**
 * SIGKILLs the children spawned here that are still running (only those a test spawned, with
 * `tests`), and resolves once they have exited. A test that means to stop its service gracefully
 * does so itself and checks how it went; this is the net under it.
 */
export async function stopSpawned({ tests = false } = {}): Promise<void> {
  const stopping = [...live].filter(([, spawned]) => !tests || spawned.inTest);
  await Promise.all(
    stopping.map(([child, spawned]) => {
      if (spawned.group && child.pid !== undefined) {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          // The group is gone already.
        }
      } else child.kill('SIGKILL');
      return spawned.exited;
    }),
  );
}

// Registered by importing this module: Jest runs a helper's top-level hooks for the test file
// that imports it, before the file's own afterEach and afterAll.
beforeEach(() => {
  inTest = true;
});
afterEach(async () => {
  inTest = false;
  await stopSpawned({ tests: true });
});
afterAll(() => stopSpawned());

/**
 * Runs the built service (`node dist/main.js`, as `npm start` runs it once built) with the given
 * environment; `main` runs another build of it (a fork's, in a copy of the repository), and
 * `command` another command altogether (`npm start` itself, exactly as the README says).
 */
export function spawnService(
  env: Record<string, string>,
  {
    cwd,
    main = MAIN,
    command = [process.execPath, main],
  }: { cwd?: string; main?: string; command?: readonly [string, ...string[]] } = {},
): ServiceProcess {
  const [file, ...args] = command;
  const group = command[0] !== process.execPath;
  const child = spawn(file, args, {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      LOG_LEVEL: 'info',
      // Never the checkout's ./data/audio (the default): a test's files go under the temp folder.
      AUDIO_DIR: env.AUDIO_DIR ?? mkdtempSync(join(tmpdir(), 'aw-audio-')),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(cwd === undefined ? {} : { cwd }),
    // A command (`npm start`) runs the service as its grandchild: in a group of its own, the
    // net below stops the whole group, not npm alone (a service left holding its port failed
    // the next test).
    detached: group,
  });
  const logs: Record<string, unknown>[] = [];
  const waiters: { match: string | RegExp; resolve: (line: Record<string, unknown>) => void }[] =
    [];
  const matches = (line: Record<string, unknown>, match: string | RegExp) =>
    typeof line.msg === 'string' &&
    (typeof match === 'string' ? line.msg === match : match.test(line.msg));
  let stderr = '';
  const checks: { condition: () => boolean; resolve: () => void }[] = [];
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  createInterface({ input: child.stdout }).on('line', (text) => {
    let line: Record<string, unknown>;
    try {
      line = JSON.parse(text) as Record<string, unknown>;
    } catch {
      line = { msg: text };
    }
    logs.push(line);
    for (const waiter of waiters.filter((w) => matches(line, w.match))) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve(line);
    }
    for (const check of checks.filter((c) => c.condition())) {
      checks.splice(checks.indexOf(check), 1);
      check.resolve();
    }
  });
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      live.delete(child);
      resolve(code);
    }),
  );
  live.set(child, { exited, inTest, group });
  const until = (condition: () => boolean): Promise<void> => {
    if (condition()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      checks.push({ condition, resolve });
      void exited.then((code) => {
        reject(new Error(`service exited (${code}) before the condition held: ${stderr}`));
      });
    });
  };
  const receivingPids = () => {
    const pidsOf = (pick: (line: Record<string, unknown>) => boolean) =>
      logs.filter(pick).map((line) => line.pid as number);
    const connected = new Set(
      pidsOf((line) => line.msg === 'Redis connected' && line.connection === 'web'),
    );
    const started = pidsOf((line) => line.msg === 'audio-webhooks started');
    return started.every((pid) => connected.has(pid)) ? started : [];
  };
  return {
    child,
    logs,
    exited,
    stderr: () => stderr,
    until,
    async receiving(count = 1) {
      await until(() => receivingPids().length >= count);
      return receivingPids();
    },
    waitForLog(match) {
      const seen = logs.find((line) => matches(line, match));
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        waiters.push({ match, resolve });
        void exited.then((code) => {
          reject(new Error(`service exited (${code}) before "${String(match)}": ${stderr}`));
        });
      });
    },
  };
}

/** True while any process of the group `pgid` is alive (a test's detached command and its children). */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * A preload (`node --require`) that has the process send itself SIGTERM as it hands a log line
 * holding `text` to stdout or stderr, by fs (pino's writes, which go out on libuv's thread pool
 * while the main thread runs on) or by the process's streams: the earliest a supervisor reading
 * its output could signal.
 */
export function sigtermAtLine(text: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'aw-preload-')), 'sigterm-at-line.cjs');
  writeFileSync(
    file,
    `const fs = require('node:fs');
const text = ${JSON.stringify(text)};
let signalled = false;
const signalOn = (data) => {
  if (signalled || !String(data).includes(text)) return;
  signalled = true;
  process.kill(process.pid, 'SIGTERM');
};
for (const name of ['write', 'writeSync']) {
  const original = fs[name];
  fs[name] = function (fd, data, ...rest) {
    if (fd === 1 || fd === 2) signalOn(data);
    return original.call(this, fd, data, ...rest);
  };
}
for (const stream of [process.stdout, process.stderr]) {
  const original = stream.write;
  stream.write = function (data, ...rest) {
    signalOn(data);
    return original.call(this, data, ...rest);
  };
}
`,
  );
  return file;
}

/** spawnService's options for a service run with sigtermAtLine(text). */
export function signalledAtLine(text: string): { command: [string, ...string[]] } {
  return { command: [process.execPath, '--require', sigtermAtLine(text), MAIN] };
}
