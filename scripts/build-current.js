#!/usr/bin/env node
// `npm start` and `npm run dev` run what src/ holds now: an incremental build (a few seconds when
// little changed), then the build's src/custom/ files whose source is gone are removed, since
// the service loads src/custom/ by what exists (src/load-custom.ts) and tsc never deletes output.
'use strict';
const { execFileSync } = require('node:child_process');
const { existsSync, readdirSync, rmSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
if (!existsSync(tsc)) {
  // A production install (npm ci --omit=dev) has no compiler: run the build it shipped with.
  if (existsSync(join(root, 'dist', 'main.js'))) process.exit(0);
  process.stderr.write('audio-webhooks: no build and no TypeScript to make one; run npm ci\n');
  process.exit(1);
}
try {
  execFileSync(
    process.execPath,
    [
      tsc,
      '-p',
      join(root, 'tsconfig.build.json'),
      '--incremental',
      '--tsBuildInfoFile',
      join(root, 'dist', '.tsbuildinfo'),
    ],
    { stdio: 'inherit' },
  );
} catch {
  // tsc has printed the errors.
  process.exit(1);
}
const built = join(root, 'dist', 'custom');
if (existsSync(built)) {
  for (const name of readdirSync(built)) {
    const stem = name.replace(/\.(js|js\.map|d\.ts|d\.ts\.map)$/, '');
    if (!existsSync(join(root, 'src', 'custom', `${stem}.ts`))) rmSync(join(built, name));
  }
}
