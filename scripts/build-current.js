#!/usr/bin/env node
// `npm start` and `npm run dev` run what src/ holds now: an incremental build (a few seconds when
// little changed), then the build's files whose source is gone are removed, since tsc never
// deletes output: the service loads src/custom/ by what exists (src/load-custom.ts), and a
// module left at an old path would keep loading there.
// `npm ci` runs it too (the `prepare` script), so the first `npm start` after it finds the build
// current: with a bare `tsc` there, that start rebuilt everything, 13 to 25 s without a word.
'use strict';
const { execFileSync } = require('node:child_process');
const { existsSync, readdirSync, readFileSync, rmSync, statSync, utimesSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
if (!existsSync(tsc)) {
  // A production install (npm ci --omit=dev) has no compiler: run the build it shipped with.
  if (existsSync(join(root, 'dist', 'main.js'))) process.exit(0);
  process.stderr.write('audio-webhooks: no build and no TypeScript to make one; run npm ci\n');
  process.exit(1);
}
const buildInfo = join(root, 'dist', '.tsbuildinfo');
const whole = wholeBuildReason();
const changed = whole === undefined && changedSinceBuild();
if (whole !== undefined) {
  process.stderr.write(`audio-webhooks: building src/ into dist/ (${whole}: 10 to 30 s)…\n`);
} else if (changed) {
  process.stderr.write('audio-webhooks: building what changed in src/ (a few seconds)…\n');
}
if (whole !== undefined || changed) {
  const started = new Date();
  try {
    execFileSync(
      process.execPath,
      [
        tsc,
        '-p',
        join(root, 'tsconfig.build.json'),
        '--incremental',
        '--tsBuildInfoFile',
        buildInfo,
      ],
      { stdio: 'inherit' },
    );
  } catch {
    // tsc has printed the errors.
    process.exit(1);
  }
  // tsc leaves the build info alone when nothing needed building (a file touched, not changed):
  // dated by when this build began, it is current from then on, and a file saved while tsc ran
  // is newer and built next time.
  utimesSync(buildInfo, started, started);
}
removeOrphans(join(root, 'dist'), join(root, 'src'));

/**
 * Removes what the build holds for sources that are gone (a file moved, renamed or deleted), and
 * the folders left empty: a module left behind would still load, and a test or a script naming
 * its old path would pass here and fail on a fresh clone.
 */
function removeOrphans(built, source) {
  if (!existsSync(built)) return;
  for (const entry of readdirSync(built, { withFileTypes: true })) {
    const path = join(built, entry.name);
    if (entry.isDirectory()) {
      removeOrphans(path, join(source, entry.name));
      if (readdirSync(path).length === 0) rmSync(path, { recursive: true });
      continue;
    }
    const stem = entry.name.replace(/\.(js|js\.map|d\.ts|d\.ts\.map)$/, '');
    if (stem === entry.name) continue; // not a build output (.tsbuildinfo)
    if (!existsSync(join(source, `${stem}.ts`))) rmSync(path);
  }
}

/**
 * Why this build compiles everything, or undefined when it starts from the last one: no build
 * info yet (a fresh clone), or build info from another TypeScript (tsc then starts over).
 */
function wholeBuildReason() {
  if (!existsSync(buildInfo) || !existsSync(join(root, 'dist', 'main.js'))) {
    return 'the first build in this clone';
  }
  let info;
  try {
    info = JSON.parse(readFileSync(buildInfo, 'utf8'));
  } catch {
    return 'the last build info is unreadable';
  }
  const { version } = JSON.parse(
    readFileSync(join(root, 'node_modules', 'typescript', 'package.json'), 'utf8'),
  );
  return info.version === version ? undefined : `TypeScript ${version} is new here`;
}

/**
 * Whether anything the build reads is newer than the last build: a file or folder under src/
 * (a folder's time changes when a file in it is added, removed or renamed), the tsconfig files,
 * package.json, or the installed packages (npm writes node_modules/.package-lock.json). The same
 * test `tsc --build` makes; asking tsc itself took 4 s on 2 cores with nothing to do, this 20 ms.
 */
function changedSinceBuild() {
  const builtAt = statSync(buildInfo).mtimeMs;
  const newer = (path) => existsSync(path) && statSync(path).mtimeMs > builtAt;
  const inputs = ['tsconfig.json', 'tsconfig.build.json', 'package.json'].map((f) => join(root, f));
  if ([...inputs, join(root, 'node_modules', '.package-lock.json')].some(newer)) return true;
  const src = join(root, 'src');
  return (
    newer(src) ||
    readdirSync(src, { recursive: true, encoding: 'utf8' }).some((path) => newer(join(src, path)))
  );
}
