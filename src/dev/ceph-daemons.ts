import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** How long each daemon may take to come up (about 1 s for the OSD, 8 s for radosgw). */
export const STARTING = { timeoutMs: 60_000, everyMs: 200 };

export interface CephDaemons {
  /**
   * Runs `command -f -c <conf> ...args` in the foreground as a child of this process; when it
   * exits with an error, the tail of its stderr is kept for exitOutput(log).
   */
  start(command: string, args: string[], log: string): ChildProcess;
  /** What daemon `log` wrote to stderr before it exited with an error. */
  exitOutput(log: string): string;
  /** Stops one daemon by its PID: SIGTERM, then SIGKILL after 5 s. */
  stop(child: ChildProcess): Promise<void>;
  /** Stops every daemon started, the last one first. */
  stopAll(): Promise<void>;
}

/** The daemons of the cluster configured by `conf`, with their logs under `<dir>/log`. */
export function cephDaemons(conf: string, dir: string): CephDaemons {
  const children: ChildProcess[] = [];
  const exitFile = (log: string) => join(dir, 'log', `${log}.exit`);
  return {
    start(command, args, log) {
      const child = spawn(command, ['-f', '-c', conf, ...args], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr.on(
        'data',
        (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)),
      );
      child.once('exit', (code) => {
        if (code !== 0 && code !== null) writeFileSync(exitFile(log), stderr);
      });
      children.push(child);
      return child;
    },
    exitOutput(log) {
      try {
        return readFileSync(exitFile(log), 'utf8').slice(-500);
      } catch {
        return '(no output)';
      }
    },
    stop: stopChild,
    async stopAll() {
      await Promise.all([...children].reverse().map((child) => stopChild(child)));
    },
  };
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}
