import { SingleBar } from 'cli-progress';
import type { Output } from './print.js';

export interface Progress {
  /** `value` of the total; `line` is what a log (not a terminal) gets instead of the bar. */
  update(value: number, payload: Readonly<Record<string, string>>, line: string): void;
  stop(): void;
}

/**
 * A progress bar on standard error when it is a terminal; plain lines otherwise (a CI log, a
 * pipe), which a bar's carriage returns would garble. Standard output keeps only the answer.
 */
export function startProgress(
  errors: Output & { readonly isTTY?: boolean },
  format: string,
  total: number,
  payload: Readonly<Record<string, string>>,
): Progress {
  if (errors.isTTY !== true) {
    return {
      update(_value, _payload, line) {
        errors.out(`${line}\n`);
      },
      stop() {},
    };
  }
  const bar = new SingleBar({ format, stream: process.stderr });
  bar.start(total, 0, payload);
  let running = true;
  return {
    update(value, next) {
      bar.update(value, next);
    },
    stop() {
      if (running) bar.stop();
      running = false;
    },
  };
}
