import { execFileSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { withDeadline } from '../../src/util/deadline';
import { serviceSettings } from '../helpers/service-settings';
import { spawnService, type ServiceProcess } from '../helpers/spawn-service';

// Every start-up check has a deadline: a store or a file that never answers is one line naming
// what the service waited on, and exit 1, not a silent hang.

const tempDir = () => mkdtempSync(join(tmpdir(), 'aw-startup-'));

function startWorker(env: Record<string, string>, nodeOptions?: string): ServiceProcess {
  return spawnService(
    serviceSettings({
      ROLE: 'worker',
      LOG_LEVEL: 'warn',
      ...(nodeOptions === undefined ? {} : { NODE_OPTIONS: nodeOptions }),
      ...env,
    }),
  );
}

const stopped = (service: ServiceProcess) => {
  if (service.child.exitCode === null && service.child.signalCode === null)
    service.child.kill('SIGKILL');
};

it('an AUDIO_DIR whose check never answers: one line naming AUDIO_DIR and the wait, exit 1', async () => {
  const dir = tempDir();
  const audioDir = join(dir, 'audio');
  // A hung mount (an NFS server gone, a stuck FUSE daemon) cannot be made without root, so the
  // check's open() under AUDIO_DIR is made to never answer, the loop kept alive as a pending
  // request keeps it. Not a real blocked open (a FIFO): libuv joins its threads when the process
  // exits, so a thread stuck in a system call holds even process.exit() (seen on Node 20).
  const preload = join(dir, 'hang-audio-dir.js');
  writeFileSync(
    preload,
    `const fsp = require('node:fs/promises');
const real = fsp.open;
fsp.open = (path, ...rest) =>
  String(path).startsWith(${JSON.stringify(audioDir)})
    ? new Promise(() => setInterval(() => undefined, 60_000))
    : real(path, ...rest);
`,
  );
  const service = startWorker({ AUDIO_DIR: audioDir }, `--require ${preload}`);
  try {
    // The check's deadline (STORE_CHECK_DEADLINE_MS, 15 s), plus the start, plus slack.
    expect(await withDeadline(service.exited, 25_000, 'the exit')).toBe(1);
    const lines = service.stderr().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`AUDIO_DIR ${audioDir}`);
    expect(lines[0]).toMatch(/probe file\) did not answer within 15000 ms/);
  } finally {
    stopped(service);
  }
}, 30_000);

it('a DOWNLOAD_CA_FILE that never answers (a FIFO): one line naming it, then exit 1', async () => {
  const dir = tempDir();
  const fifo = join(dir, 'ca.pem');
  execFileSync('mkfifo', [fifo]);
  const service = startWorker({ AUDIO_DIR: join(dir, 'audio'), DOWNLOAD_CA_FILE: fifo });
  // spawnService's own listener comes first, so stderr() already holds the chunk heard here.
  const said = new Promise<void>((resolve) => {
    service.child.stderr?.on('data', () => {
      if (service.stderr().includes('DOWNLOAD_CA_FILE')) resolve();
    });
  });
  try {
    await withDeadline(said, 15_000, 'the line');
    expect(service.stderr()).toMatch(
      new RegExp(`DOWNLOAD_CA_FILE ${fifo} cannot be read: .*did not answer within 5000 ms`),
    );
    // The open() of the FIFO still holds one of libuv's threads, which process.exit() joins:
    // opening the other end releases it (a hung mount would not: see the test above).
    // Non-blocking: were the service gone, this fails (ENXIO) instead of waiting for a reader.
    closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK));
    expect(await withDeadline(service.exited, 5_000, 'the exit')).toBe(1);
  } finally {
    stopped(service);
  }
}, 30_000);
