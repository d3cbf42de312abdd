import { execFile } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = join(__dirname, '..', '..');
const BIN = join(root, 'bin', 'audio-webhooks.js');

/** What the recording hooks wrote: one line per hook call. */
export interface HookCall {
  readonly hook: string;
  readonly id: string;
  readonly replay: boolean;
  readonly jobId: string;
  readonly receivedAt: string;
}

/**
 * The built service as a fork with a src/custom/hooks.ts would run it: a copy of dist/ whose
 * custom/hooks.js appends each call (`id`, and `context.delivery.replay`) to $HOOK_LOG. Written
 * as the build's JavaScript: the fork's TypeScript build is proven by fork-custom-events.test.ts.
 */
export function recordingHooksBuild(): { main: string; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'aw-hooked-'));
  cpSync(join(root, 'dist'), join(dir, 'dist'), { recursive: true });
  cpSync(join(root, 'package.json'), join(dir, 'package.json'));
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  mkdirSync(join(dir, 'dist', 'custom'), { recursive: true });
  writeFileSync(
    join(dir, 'dist', 'custom', 'hooks.js'),
    `'use strict';
const { appendFileSync } = require('node:fs');
const record = (hook, id, { delivery }) =>
  appendFileSync(process.env.HOOK_LOG, JSON.stringify({ hook, id, replay: delivery.replay, jobId: delivery.jobId, receivedAt: delivery.receivedAt }) + '\\n');
exports.hooks = {
  async audioReady(event, _audio, context) { record('audioReady', event.data.id, context); },
  async audioFailed(event, context) { record('audioFailed', event.data.id, context); },
  async keyRevoked(event, context) { record('keyRevoked', event.data.id, context); },
};
`,
  );
  return { main: join(dir, 'dist', 'main.js'), dir };
}

/**
 * The hook calls logged so far. Read while workers append: only whole lines (each ends with its
 * newline); a read can catch the last one half written (a fresh-clone CI run did).
 */
export function hookCalls(file: string): HookCall[] {
  if (!existsSync(file)) return [];
  const text = readFileSync(file, 'utf8');
  return text
    .slice(0, text.lastIndexOf('\n') + 1)
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as HookCall);
}

export interface CliRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  /** The process's peak resident memory (rusage maxRSS), in bytes. */
  readonly maxRssBytes: number;
}

/** Runs `node bin/audio-webhooks.js <args>` as an operator would, in its own process. */
export function runCliProcess(
  args: readonly string[],
  env: Record<string, string>,
): Promise<CliRun> {
  const dir = mkdtempSync(join(tmpdir(), 'aw-cli-'));
  const report = join(dir, 'report-rss.js');
  const rssFile = join(dir, 'rss');
  writeFileSync(
    report,
    `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(rssFile)}, String(process.resourceUsage().maxRSS * 1024)));\n`,
  );
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--require', report, BIN, ...args],
      { env: { PATH: process.env.PATH ?? '', ...env }, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
        const maxRssBytes = existsSync(rssFile) ? Number(readFileSync(rssFile, 'utf8')) : 0;
        resolve({ code, stdout, stderr, maxRssBytes });
      },
    );
  });
}
