#!/usr/bin/env node
// What the tests run besides Node.js and Redis, declared once: `npm test` runs this first (and
// `npm run test:quick` with --quick, for the few tools its tests use), and .ci/run only calls
// `npm test`. When something is missing, as root with apt-get it installs Debian's packages,
// saying so in one line; otherwise it stops at once with one line naming what is missing and how
// to get it, rather than the suite failing after 15 minutes. With everything present it prints
// nothing and asks no package index.
'use strict';
const { spawn } = require('node:child_process');
const {
  accessSync,
  closeSync,
  constants,
  mkdtempSync,
  openSync,
  readFileSync,
  statSync,
} = require('node:fs');
const { connect } = require('node:net');
const { tmpdir } = require('node:os');
const { delimiter, join } = require('node:path');

/**
 * A command the tests run, the Debian package that brings it, and why. `quick`: the quick set's
 * tests run it too. `path`: found there (as the test helper looks), not on PATH.
 */
const TOOLS = [
  // Private servers for the tests that stop, fill or fail over Redis; redis-cli makes a Cluster.
  { command: 'redis-server', package: 'redis-server', quick: true },
  { command: 'redis-cli', package: 'redis-tools' },
  // The checkout guard and the fork tests list the clone's files.
  { command: 'git', package: 'git', quick: true },
  // The README's signing example and the S3 upload tests; openssl also makes the test CDN's
  // certificate.
  { command: 'curl', package: 'curl' },
  { command: 'openssl', package: 'openssl', quick: true },
  // A terminal for the log-format and replay tests (script), a PID namespace for the
  // shared-volume test (unshare), the processes local-s3 leaves (ps). Part of every Debian
  // system; listed so that a slimmer image says what it lacks.
  { command: 'script', package: 'bsdutils', quick: true },
  { command: 'unshare', package: 'util-linux', quick: true },
  { command: 'ps', package: 'procps' },
  // The dashboard's browser test, driven by playwright-core, which brings no browser.
  {
    command: 'chromium',
    package: 'chromium',
    path: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  },
  // `kubectl kustomize` renders deploy/kubernetes (Debian's 1.20 renders it as 1.32 does).
  { command: 'kubectl', package: 'kubernetes-client' },
  // The compose file as Debian 12's podman-compose 1.0.3 reads it, in --dry-run: no engine.
  { command: 'podman-compose', package: 'podman-compose' },
  // Ceph's RADOS Gateway on a one-node cluster: the real S3 server of the S3 tests and of
  // `npm run local-s3` (src/dev/ceph-gateway.ts).
  { command: 'ceph-mon', package: 'ceph-mon' },
  { command: 'ceph-osd', package: 'ceph-osd' },
  { command: 'radosgw', package: 'radosgw' },
  { command: 'radosgw-admin', package: 'radosgw' },
  { command: 'ceph', package: 'ceph-common' },
  { command: 'ceph-authtool', package: 'ceph-common' },
  { command: 'monmaptool', package: 'ceph-common' },
  // A private NATS for forwarding's outage test.
  { command: 'nats-server', package: 'nats-server' },
  // The alert rules' unit tests (promtool), and a real server scraping the service.
  { command: 'prometheus', package: 'prometheus' },
  { command: 'promtool', package: 'prometheus' },
];

/**
 * Servers the forwarding tests use as they are (the README's prerequisites, with Redis): a
 * package would install them, not run them as the tests need, so they are named, never installed.
 */
const SERVICES = [
  {
    name: 'NATS with JetStream on 127.0.0.1:4222 (nats-server -js)',
    port: 4222,
    // A NATS server greets with INFO {json}, which says whether JetStream is on.
    greeting: /"jetstream":\s*true/,
  },
  // RabbitMQ waits for the client to speak first: that it accepts a connection is what it shows.
  { name: 'RabbitMQ on 127.0.0.1:5672 (user guest; apt-get install rabbitmq-server)', port: 5672 },
];

const quick = process.argv.includes('--quick');
const label = quick ? 'npm run test:quick' : 'npm test';

void main();

async function main() {
  const tools = TOOLS.filter((tool) => tool.quick || !quick);
  const services = quick ? [] : SERVICES;
  const missingServices = (
    await Promise.all(services.map(async (service) => ((await probe(service)) ? [] : [service])))
  ).flat();
  const missing = tools.filter((tool) => !found(tool));
  if (missing.length === 0 && missingServices.length === 0) return;

  const packages = [...new Set(missing.map((tool) => tool.package))];
  const root = process.getuid?.() === 0;
  if (missingServices.length === 0 && root && onPath('apt-get')) {
    await install(packages);
    const still = tools.filter((tool) => !found(tool));
    if (still.length === 0) return;
    stop(still, []);
  }
  stop(missing, missingServices);
}

/** Installs the packages with apt-get; its output goes to a log, its last line shown on failure. */
async function install(packages) {
  const log = join(mkdtempSync(join(tmpdir(), 'aw-apt-')), 'apt-get.log');
  process.stderr.write(
    `${label}: installing ${packages.join(' ')} from Debian's packages (apt-get, a few minutes; log: ${log})\n`,
  );
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  // Waits for a lock another apt-get holds rather than failing at once.
  const lock = ['-o', 'DPkg::Lock::Timeout=300'];
  const steps = [
    ['update', '-qq', ...lock],
    ['install', '-y', '-qq', '--no-install-recommends', ...lock, ...packages],
  ];
  for (const args of steps) {
    const code = await run('apt-get', args, env, log);
    if (code !== 0) {
      const last = readFileSync(log, 'utf8').trim().split('\n').pop() ?? '';
      fail(`apt-get ${args[0]} failed (exit ${code}): ${last} (log: ${log})`);
    }
  }
}

function run(command, args, env, log) {
  const out = openSync(log, 'a');
  return new Promise((resolve) => {
    const child = spawn(command, args, { env, stdio: ['ignore', out, out] });
    let ended = false;
    const end = (code) => {
      if (ended) return;
      ended = true;
      closeSync(out);
      resolve(code);
    };
    child.on('error', () => end(-1));
    child.on('exit', (code) => end(code ?? -1));
  });
}

/** One line: what is missing, the apt-get command that brings the tools, and the way round. */
function stop(tools, services) {
  const names = [
    ...tools.map((tool) => (tool.path ? `${tool.command} (at ${tool.path})` : tool.command)),
    ...services.map((service) => service.name),
  ];
  const packages = [...new Set(tools.map((tool) => tool.package))];
  const how = [];
  if (packages.length > 0) {
    const sudo = process.getuid?.() === 0 ? '' : 'sudo ';
    how.push(
      `${sudo}apt-get install --no-install-recommends ${packages.join(' ')} (Debian/Ubuntu)`,
    );
  }
  if (services.length > 0)
    how.push(`start ${services.length > 1 ? 'those servers' : 'that server'}`);
  const instead = quick ? '' : '; while editing, npm run test:quick needs only Redis';
  fail(`missing ${names.join(', ')}: ${how.join(', and ')}${instead}`);
}

function fail(message) {
  process.stderr.write(`${label}: ${message}\n`);
  process.exit(1);
}

function found(tool) {
  return tool.path ? executable(tool.path) : onPath(tool.command);
}

function onPath(command) {
  return (process.env.PATH ?? '')
    .split(delimiter)
    .some((dir) => dir !== '' && executable(join(dir, command)));
}

function executable(path) {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** Whether the service accepts a connection (and greets as expected) within 2 s. */
function probe({ port, greeting }) {
  return new Promise((resolve) => {
    let received = '';
    const socket = connect({ host: '127.0.0.1', port });
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(2000, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => {
      if (!greeting) done(true);
    });
    socket.on('data', (chunk) => {
      received += String(chunk);
      if (received.includes('\n')) done(greeting.test(received));
    });
  });
}
