import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import {
  existsSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:http';
import { endianness, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import ipaddr from 'ipaddr.js';
import request from 'supertest';
import { audio, startLocalCdn } from '../../harness/local-cdn';
import { freePort } from '../../harness/private-redis';
import { eventually } from '../../harness/sandbox-process';
import { downloadsFrom, serviceSettings } from '../helpers/service-settings';
import { groupAlive, spawnService } from '../helpers/spawn-service';
import { signed } from '../helpers/test-receiver';

// `npm run local-s3` as a newcomer runs it: the settings it prints run the service against it, a
// delivery lands as an object, and SIGTERM leaves no process and no temp folder behind.
const root = join(__dirname, '..', '..');

/** Scripts started in a process group of their own; after each test, none of them is left. */
const started: ChildProcess[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((child) => stopGroup(child)));
});

/** The built script (global-setup builds dist/). */
const LOCAL_S3: readonly [string, ...string[]] = [
  process.execPath,
  join(root, 'dist', 'dev', 'local-s3.js'),
];

/**
 * Starts a command in a process group of its own (what it starts is stopped with it, however the
 * test ends), keeping what it writes to stderr.
 */
function startScript(command: readonly [string, ...string[]], env: NodeJS.ProcessEnv) {
  const [file, ...args] = command;
  const child = spawn(file, args, {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  started.push(child);
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return { child, stderr: () => stderr, exited: once(child, 'exit') };
}

it('npm run local-s3: prints the settings, the service stores a delivery with them, SIGTERM leaves nothing', async () => {
  const port = await freePort();
  const { child, stderr, exited } = startScript(['npm', 'run', 'local-s3'], {
    ...process.env,
    LOCAL_S3_PORT: String(port),
    LOCAL_S3_BUCKET: 'try-it',
  });
  const settings: Record<string, string> = {};
  const lines: string[] = [];
  for await (const line of createInterface({ input: child.stdout })) {
    if (line === 'ready') break;
    lines.push(line);
    const match = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(line);
    if (match) settings[match[1] ?? ''] = match[2] ?? '';
  }
  // npm's own banner aside, the script's output is the settings, one a line.
  expect(lines.filter((line) => line !== '' && !line.startsWith('> '))).toHaveLength(7);
  expect(settings).toEqual({
    AUDIO_STORE: 's3',
    S3_ENDPOINT: `http://127.0.0.1:${port}`,
    S3_BUCKET: 'try-it',
    S3_FORCE_PATH_STYLE: 'true',
    AWS_ACCESS_KEY_ID: expect.any(String),
    AWS_SECRET_ACCESS_KEY: expect.any(String),
    AWS_REGION: 'us-east-1',
  });
  // Said on standard error, a pipe of its own: read once it has come.
  const dataFolder = await eventually(() =>
    Promise.resolve(/Data folder: (\S+)/.exec(stderr())?.[1]),
  );
  expect(existsSync(dataFolder)).toBe(true);

  const cdn = await startLocalCdn();
  const wav = Buffer.from('RIFF local s3 audio');
  cdn.route('/try.wav', audio(wav, 'audio/wav'));
  const caFile = join(mkdtempSync(join(tmpdir(), 'aw-ca-')), 'ca.pem');
  writeFileSync(caFile, cdn.ca);
  const webPort = await freePort();
  const service = spawnService(
    serviceSettings({
      ...settings,
      QUEUE_PREFIX: `test-local-s3-${String(port)}`,
      PORT: String(webPort),
      ...downloadsFrom(cdn.origin, caFile),
    }),
  );
  const client = new S3Client({
    region: settings.AWS_REGION ?? '',
    endpoint: settings.S3_ENDPOINT ?? '',
    forcePathStyle: true,
    credentials: {
      accessKeyId: settings.AWS_ACCESS_KEY_ID ?? '',
      secretAccessKey: settings.AWS_SECRET_ACCESS_KEY ?? '',
    },
  });
  try {
    await service.waitForLog('audio-webhooks started');
    const { raw, headers } = signed({
      event: 'audio.ready',
      data: {
        id: 'tried',
        kind: 'tts',
        audio_url: `${cdn.origin}/try.wav`,
        voice: 'alloy',
        created_at: '2026-11-24T10:00:00Z',
      },
    });
    await request(`http://127.0.0.1:${String(webPort)}`)
      .post('/webhooks')
      .set(headers)
      .send(raw)
      .expect(202);
    const stored = await eventually(
      async () => {
        const got = await client
          .send(new GetObjectCommand({ Bucket: 'try-it', Key: 'tried.wav' }))
          .catch(() => undefined);
        return got?.Body === undefined
          ? undefined
          : Buffer.from(await got.Body.transformToByteArray());
      },
      { timeoutMs: 30_000, everyMs: 200 },
    );
    expect(stored.equals(wav)).toBe(true);
  } finally {
    client.destroy();
    service.child.kill('SIGTERM');
    await service.exited;
    await cdn.close();
  }

  child.kill('SIGTERM');
  const [code] = (await exited) as [number | null];
  expect(code).toBe(0);
  expect(existsSync(dataFolder)).toBe(false);
  // No daemon of its left: none names its folder on its command line.
  const left = execFileSync('ps', ['-eo', 'args='], { encoding: 'utf8' })
    .split('\n')
    .filter((args) => args.includes(dataFolder));
  expect(left).toEqual([]);
}, 120_000);

// Ceph runs with `auth = none`: whoever reaches a daemon can read and delete every object. So
// every socket the script's processes listen on, its own and its daemons', must be on loopback.
it('npm run local-s3: every daemon it starts listens on loopback only', async () => {
  const port = await freePort();
  // Its process group: every daemon it starts is found by it, and stopped with it.
  const { child, stderr } = startScript(LOCAL_S3, { ...process.env, LOCAL_S3_PORT: String(port) });
  const pgid = child.pid ?? 0;
  await readyWithin(child.stdout, 90_000, stderr);
  const listeners = listenersOfGroup(pgid);
  // The check is not empty: the monitor, the OSD and radosgw each hold a listener.
  expect(new Set(listeners.map((listener) => listener.command))).toEqual(
    new Set(['ceph-mon', 'ceph-osd', 'radosgw']),
  );
  expect(listeners).toContainEqual({ command: 'radosgw', address: '127.0.0.1', port });
  expect(
    listeners
      .filter((listener) => ipaddr.process(listener.address).range() !== 'loopback')
      .map(({ command, address, port: bound }) => `${command} ${address}:${String(bound)}`),
  ).toEqual([]);
}, 120_000);

// When something else holds LOCAL_S3_PORT, the settings would point at it: another gateway with
// the same test credentials once took a user's audio. The stand-in answers 200 to every request,
// as a gateway would to the start-up probe and to CreateBucket, so only a check of who holds the
// port can tell it apart.
describe('npm run local-s3 when its port is taken', () => {
  it('says so before starting Ceph: no settings, no ready, exit 1, one line naming LOCAL_S3_PORT', async () => {
    const port = await freePort();
    const squatter = await answerEverything(port);
    try {
      const run = await runLocalS3(port);
      expect(run.code).toBe(1);
      expect(run.stdout).not.toMatch(/^[A-Z][A-Z0-9_]*=/m);
      expect(run.stdout).not.toMatch(/^ready$/m);
      expect(run.stderrLines).toEqual([expect.stringContaining(`${port} (LOCAL_S3_PORT)`)]);
      expect(run.leftBehind).toEqual([]);
    } finally {
      await squatter.close();
    }
  }, 60_000);

  it('says so when the port is taken while Ceph starts, and stops what it started', async () => {
    const port = await freePort();
    let squatter: Listener | undefined;
    try {
      // Taken once the script has said it is starting: its own check has passed by then, and
      // radosgw binds some seconds later, after the monitor and the OSD.
      const run = await runLocalS3(port, async (line) => {
        if (line.includes('starting Ceph')) squatter = await answerEverything(port);
      });
      expect(squatter).toBeDefined();
      expect(run.code).toBe(1);
      expect(run.stdout).not.toMatch(/^[A-Z][A-Z0-9_]*=/m);
      expect(run.stdout).not.toMatch(/^ready$/m);
      expect(run.stderrLines.filter((line) => line.includes('LOCAL_S3_PORT'))).toEqual([
        expect.stringContaining(`${port} (LOCAL_S3_PORT)`),
      ]);
      expect(run.stderrLines.at(-1)).toContain('LOCAL_S3_PORT');
      expect(run.leftBehind).toEqual([]);
    } finally {
      await squatter?.close();
    }
  }, 120_000);
});

interface Listener {
  close(): Promise<void>;
}

/** An HTTP server on 127.0.0.1:port that answers 200 with an empty body to every request. */
async function answerEverything(port: number): Promise<Listener> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-length': '0' }).end());
  });
  server.listen(port, '127.0.0.1');
  await once(server, 'listening');
  return {
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

/**
 * Runs the built script (global-setup builds dist/), not npm run, so that stdout and stderr are
 * its alone, with a temp folder of its own until it exits, and reports what it printed
 * and what it left: files in that folder, processes naming it.
 */
async function runLocalS3(
  port: number,
  onStderrLine: (line: string) => Promise<void> = () => Promise.resolve(),
): Promise<{ code: number | null; stdout: string; stderrLines: string[]; leftBehind: string[] }> {
  const tmp = mkdtempSync(join(tmpdir(), 'aw-local-s3-'));
  const child = spawn(process.execPath, [join(root, 'dist', 'dev', 'local-s3.js')], {
    cwd: root,
    env: { ...process.env, LOCAL_S3_PORT: String(port), TMPDIR: tmp },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    // Fooled into `ready`, it would run until stopped: stop it, so that the test fails on what it
    // printed rather than on its timeout, with nothing left running.
    if (/^ready$/m.test(stdout)) child.kill('SIGTERM');
  });
  const exited = once(child, 'exit');
  const stderrLines: string[] = [];
  try {
    for await (const line of createInterface({ input: child.stderr })) {
      stderrLines.push(line);
      await onStderrLine(line);
    }
  } catch (error: unknown) {
    child.kill('SIGTERM');
    await exited;
    throw error;
  }
  const [code] = (await exited) as [number | null];
  const processes = execFileSync('ps', ['-eo', 'args='], { encoding: 'utf8' })
    .split('\n')
    .filter((args) => args.includes(tmp));
  const leftBehind = [...readdirSync(tmp), ...processes];
  rmSync(tmp, { recursive: true, force: true });
  return { code, stdout, stderrLines, leftBehind };
}

/**
 * The lines the script prints before `ready`, once it has; rejects, with what it wrote to stderr,
 * when it exits first or after `ms`.
 */
async function readyWithin(stdout: Readable, ms: number, stderr: () => string): Promise<string[]> {
  const lines = createInterface({ input: stdout });
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      reject(new Error(`no ready within ${String(ms)} ms: ${stderr()}`));
    }, ms);
  });
  const ready = (async () => {
    const before: string[] = [];
    for await (const line of lines) {
      if (line === 'ready') return before;
      before.push(line);
    }
    throw new Error(`exited before ready: ${stderr()}`);
  })();
  try {
    return await Promise.race([ready, late]);
  } finally {
    clearTimeout(timer);
    lines.close();
  }
}

/**
 * Stops a script started in a process group of its own: SIGTERM, on which it stops its daemons
 * and exits; whatever of the group is left after that, or after 20 s, is killed.
 */
async function stopGroup(child: ChildProcess): Promise<void> {
  const pgid = child.pid ?? 0;
  if (child.exitCode === null && child.signalCode === null) {
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    await Promise.race([exited, delay(20_000, undefined, { ref: false })]);
  }
  if (groupAlive(pgid)) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // Gone since the check.
    }
  }
}

interface TcpListener {
  readonly command: string;
  readonly address: string;
  readonly port: number;
}

/**
 * Every TCP socket listening in this network namespace that a process of group `pgid` holds:
 * /proc/net/tcp and tcp6 name each listener's address, port and socket inode, and
 * /proc/<pid>/fd links to the sockets each process has open.
 */
function listenersOfGroup(pgid: number): TcpListener[] {
  const LISTEN = '0A';
  const sockets = new Map<string, { address: string; port: number }>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      const [hexAddress, hexPort] = (fields[1] ?? '').split(':');
      if (fields[3] !== LISTEN || hexAddress === undefined || hexPort === undefined) continue;
      sockets.set(`socket:[${fields[9] ?? ''}]`, {
        address: kernelAddress(hexAddress),
        port: parseInt(hexPort, 16),
      });
    }
  }
  const listeners: TcpListener[] = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      // `pid (comm) state ppid pgrp …`: the command may hold spaces and parentheses.
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const [, , group] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(group) !== pgid) continue;
      const command = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      for (const fd of readdirSync(`/proc/${pid}/fd`)) {
        const socket = sockets.get(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (socket !== undefined) listeners.push({ command, ...socket });
      }
    } catch {
      // The process exited, or closed the descriptor, since the listing.
    }
  }
  return listeners;
}

/**
 * An address as /proc/net/tcp{,6} writes it: the bytes of each 32-bit word in the host's order,
 * as hex (`0100007F` is 127.0.0.1 on a little-endian machine).
 */
function kernelAddress(hex: string): string {
  const bytes = Buffer.from(hex, 'hex');
  if (endianness() === 'LE') {
    for (let at = 0; at < bytes.length; at += 4) bytes.subarray(at, at + 4).reverse();
  }
  return ipaddr.fromByteArray([...bytes]).toString();
}

// On Node < 22 the AWS SDK writes a nine-line notice to stderr at its first client: local-s3's
// other lines are one each, `local-s3: …`, and the notice is said as one of them.
it('npm run local-s3: standard error is one-line messages, the AWS SDK notice on Node < 22 among them, never its nine lines', async () => {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, LOCAL_S3_PORT: String(port) };
  delete env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED;
  delete env.NODE_NO_WARNINGS;
  const { child, stderr, exited } = startScript(LOCAL_S3, env);
  await readyWithin(child.stdout, 90_000, stderr);
  // Stopped before reading, so that every line it wrote has come.
  child.kill('SIGTERM');
  await exited;
  const lines = stderr()
    .split('\n')
    .filter((line) => line !== '');
  expect(stderr()).not.toMatch(/NodeVersionSupportWarning|More information can be found/);
  expect(lines.filter((line) => !line.startsWith('local-s3: '))).toEqual([]);
  const notice = lines.filter((line) => line.includes('need Node 22'));
  expect(notice).toHaveLength(Number(process.versions.node.split('.')[0]) < 22 ? 1 : 0);
}, 120_000);
