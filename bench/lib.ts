import { fork, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, openSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';

export const BENCH_SECRET = 'whsec_bench';
export const DIST_BENCH = join(__dirname, '..');
export const MAIN = join(__dirname, '..', '..', 'dist', 'main.js');

/** Forks a baseline (bench/baselines/*.js) and waits for its 'listening' message. */
export async function forkBaseline(
  name: string,
  env: Record<string, string>,
): Promise<ChildProcess> {
  const child = fork(join(__dirname, 'baselines', `${name}.js`), [], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  await once(child, 'message');
  return child;
}

/**
 * Runs the real service (`node dist/main.js`) with its log going to /dev/null (not through a pipe
 * into this process, which is also the load generator), and waits until /readyz answers 200.
 */
export async function spawnService(env: Record<string, string>): Promise<ChildProcess> {
  const devNull = openSync('/dev/null', 'w');
  const child = spawn(process.execPath, [MAIN], {
    env: { PATH: process.env.PATH ?? '', WEBHOOK_SECRETS: BENCH_SECRET, HOST: '127.0.0.1', ...env },
    stdio: ['ignore', devNull, 'inherit'],
  });
  closeSync(devNull);
  const ready = `http://127.0.0.1:${env.PORT ?? '3000'}/readyz`;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`service exited with ${child.exitCode}`);
    const ok = await fetch(ready).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return child;
    await sleep(50);
  }
}

export async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
}

export function ratio(a: number, b: number): number {
  return b === 0 ? 0 : Math.round((a / b) * 100) / 100;
}
