import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, type WriteStream } from 'node:fs';
import { createInterface } from 'node:readline';

/**
 * One process of the service (`node dist/main.js` of the service copy), as a pod: its output
 * appended to a log file, started and waited for until it says it started, killed on purpose
 * by the fault injector, and started again by whoever plays the orchestrator. An exit nobody
 * asked for is reported (`onUnplannedExit`): the soak restarts it and counts it.
 */
export interface ServiceProcess {
  readonly name: string;
  pid(): number | undefined;
  running(): boolean;
  /** Starts it and waits for its line `ready` (or its exit: then it rejects). */
  start(): Promise<void>;
  /** Sends the signal and waits for the exit; SIGTERM turns into SIGKILL after `graceMs`. */
  stop(signal: 'SIGKILL' | 'SIGTERM', graceMs?: number): Promise<void>;
  /** Log lines whose `msg` is `msg`, counted since the first start. */
  count(msg: string): number;
}

export interface ServiceProcessOptions {
  readonly name: string;
  readonly main: string;
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
  readonly log: string;
  /** The log `msg` that says it is up. */
  readonly ready: string;
  /** Log messages to count (restarts the process reports of its own children). */
  readonly counted?: readonly string[];
  readonly startTimeoutMs?: number;
  onUnplannedExit(code: number | null, signal: string | null): void;
}

export function serviceProcess(options: ServiceProcessOptions): ServiceProcess {
  let child: ChildProcess | undefined;
  const counts = new Map<string, number>();
  const log: WriteStream = createWriteStream(options.log, { flags: 'a' });
  const watched = new Set([...(options.counted ?? []), options.ready]);
  let onLine: ((msg: string) => void) | undefined;

  const start = async () => {
    if (child !== undefined) return;
    const started = spawn(process.execPath, [options.main], {
      cwd: options.cwd,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = started;
    started.stderr.pipe(log, { end: false });
    createInterface({ input: started.stdout as NodeJS.ReadableStream }).on('line', (text) => {
      log.write(`${text}\n`);
      if (!text.includes('"msg"')) return;
      let msg: unknown;
      try {
        msg = (JSON.parse(text) as { msg?: unknown }).msg;
      } catch {
        return;
      }
      if (typeof msg === 'string' && watched.has(msg)) {
        counts.set(msg, (counts.get(msg) ?? 0) + 1);
        onLine?.(msg);
      }
    });
    started.once('exit', (code, signal) => {
      if (child !== started) return;
      child = undefined;
      log.write(`[soak] ${options.name} exited: code ${String(code)}, signal ${String(signal)}\n`);
      options.onUnplannedExit(code, signal);
    });
    const readyBefore = counts.get(options.ready) ?? 0;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(
          new Error(`${options.name} did not log "${options.ready}" in time (${options.log})`),
        );
      }, options.startTimeoutMs ?? 120_000);
      onLine = () => {
        if ((counts.get(options.ready) ?? 0) > readyBefore) {
          clearTimeout(timer);
          resolve();
        }
      };
      started.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`${options.name} exited (${String(code)}) at start (${options.log})`));
      });
    });
  };

  return {
    name: options.name,
    pid: () => child?.pid,
    running: () => child !== undefined,
    start,
    async stop(signal, graceMs = 15_000) {
      const running = child;
      if (running === undefined) return;
      child = undefined;
      const exited = once(running, 'exit');
      running.kill(signal);
      const timer = setTimeout(() => running.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
      log.write(`[soak] ${options.name} stopped with ${signal}\n`);
    },
    count: (msg) => counts.get(msg) ?? 0,
  };
}
