#!/usr/bin/env node
// `npm run dev`: the service, restarted whenever src/ changes. tsc watches src/ and rebuilds
// dist/ incrementally; node's own --watch restarts the service when dist/ changes. Ctrl-C or
// SIGTERM stops both.
'use strict';
const { spawn, execFileSync } = require('node:child_process');
const { join } = require('node:path');

const root = join(__dirname, '..');
try {
  execFileSync(process.execPath, [join(__dirname, 'build-current.js')], { stdio: 'inherit' });
} catch {
  process.exit(1);
}
const compiler = spawn(
  process.execPath,
  [
    join(root, 'node_modules', 'typescript', 'bin', 'tsc'),
    '-p',
    join(root, 'tsconfig.build.json'),
    '--watch',
    '--preserveWatchOutput',
    '--incremental',
    '--tsBuildInfoFile',
    join(root, 'dist', '.tsbuildinfo'),
  ],
  { stdio: ['ignore', 'inherit', 'inherit'] },
);
const service = spawn(
  process.execPath,
  ['--watch-path', join(root, 'dist'), join(root, 'dist', 'main.js')],
  { stdio: 'inherit' },
);
const stop = (signal) => {
  compiler.kill('SIGTERM');
  service.kill(signal);
};
process.on('SIGINT', () => stop('SIGINT'));
process.on('SIGTERM', () => stop('SIGTERM'));
service.on('exit', (code) => {
  compiler.kill('SIGTERM');
  process.exitCode = code ?? 0;
});
