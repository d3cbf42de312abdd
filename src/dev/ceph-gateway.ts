import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { endianness, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { S3Client } from '@aws-sdk/client-s3';
import { eventually } from '../util/eventually.js';
import { probePort } from '../util/probe-port.js';

/** How long each daemon may take to come up (about 1 s for the OSD, 8 s for radosgw). */
const STARTING = { timeoutMs: 60_000, everyMs: 200 };

const run = promisify(execFile);

/**
 * A real S3 server for the tests and for `npm run local-s3`: Ceph's RADOS Gateway on a single-node Ceph cluster on loopback
 * (Debian's ceph-mon, ceph-osd, radosgw; `.ci/run` installs them). One monitor, one OSD with the
 * in-memory `memstore` backend, `auth = none`, one radosgw. Everything lives in a temp directory,
 * on free ports, and every daemon runs in the foreground as a child of the test process, stopped
 * by its PID. Written for this project (the usual reference script is AGPL).
 */
export interface CephGateway {
  /** `http://127.0.0.1:<port>`: the S3 endpoint, path-style. */
  readonly endpoint: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  /** The environment a service process needs to use it (the bucket excepted). */
  readonly env: Readonly<Record<string, string>>;
  /** An S3 client of its own for the caller (tests, bench), path-style, checksums as needed. */
  client(): S3Client;
  /** Stops the gateway alone (the cluster keeps the objects), as an outage would. */
  stopGateway(): Promise<void>;
  /** Starts it again on the same port. */
  startGateway(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Another process holds the gateway's port on 127.0.0.1: what answers there is not this gateway
 * (once, another gateway with the same test credentials, which then received a user's audio).
 */
export class PortTakenError extends Error {
  constructor(
    readonly port: number,
    options?: ErrorOptions,
  ) {
    super(`port ${port} on 127.0.0.1 is taken by another process`, options);
    this.name = 'PortTakenError';
  }
}

/** Whether 127.0.0.1:port cannot be bound now because something listens there. */
export async function portIsTaken(port: number): Promise<boolean> {
  const server = createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', resolve);
    });
  } catch (error: unknown) {
    if (error instanceof Error && 'code' in error && error.code === 'EADDRINUSE') return true;
    throw error;
  }
  await new Promise((resolve) => server.close(resolve));
  return false;
}

const ACCESS_KEY = 'AKIAAUDIOWEBHOOKSTEST';
const SECRET_KEY = 'audio-webhooks-test-secret-key';

export async function startCephGateway({
  memstoreBytes = 1024 ** 3,
  port,
}: {
  /** The OSD's in-memory store: taken from RAM as it fills. @defaultValue 1 GiB */
  memstoreBytes?: number;
  /**
   * The S3 endpoint's port; PortTakenError when another process holds it once radosgw should
   * have bound it. @defaultValue a free one
   */
  port?: number;
} = {}): Promise<CephGateway & { readonly dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'aw-ceph-'));
  const monPort = await probePort();
  const rgwPort = port ?? (await probePort());
  const conf = join(dir, 'ceph.conf');
  const fsid = randomUUID();
  for (const sub of ['mon/ceph-a', 'osd/ceph-0', 'run', 'log', 'rgw']) {
    mkdirSync(join(dir, sub), { recursive: true });
  }
  writeFileSync(
    conf,
    [
      '[global]',
      `fsid = ${fsid}`,
      `mon host = v1:127.0.0.1:${monPort}`,
      'mon initial members = a',
      'auth cluster required = none',
      'auth service required = none',
      'auth client required = none',
      'ms bind ipv6 = false',
      'ms bind msgr2 = false',
      'osd pool default size = 1',
      'osd pool default min size = 1',
      // radosgw makes about eight pools at its first start: small ones, on one OSD.
      'osd pool default pg num = 8',
      'osd pool default pgp num = 8',
      'osd pool default pg autoscale mode = off',
      'mon allow pool size one = true',
      'mon max pg per osd = 1000',
      'mon warn on pool no redundancy = false',
      'mon data avail warn = 1',
      'mon data avail crit = 0',
      'osd objectstore = memstore',
      `memstore device bytes = ${memstoreBytes}`,
      'osd crush chooseleaf type = 0',
      'osd crush update on start = false',
      'osd class update on start = false',
      `run dir = ${dir}/run`,
      `log file = ${dir}/log/$name.log`,
      `admin socket = ${dir}/run/$name.asok`,
      `mon data = ${dir}/mon/$cluster-$id`,
      `osd data = ${dir}/osd/$cluster-$id`,
      `keyring = ${dir}/keyring`,
      '[client.rgw.gw]',
      `rgw frontends = beast endpoint=127.0.0.1:${rgwPort}`,
      `rgw data = ${dir}/rgw`,
      '',
    ].join('\n'),
  );
  const ceph = (...args: string[]) =>
    run('ceph', ['-c', conf, '--connect-timeout', '10', ...args], { timeout: 20_000 });
  const daemons: ChildProcess[] = [];
  const daemon = (command: string, args: string[], log: string) => {
    const child = spawn(command, ['-f', '-c', conf, ...args], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
    child.once('exit', (code) => {
      if (code !== 0 && code !== null) writeFileSync(join(dir, 'log', `${log}.exit`), stderr);
    });
    daemons.push(child);
    return child;
  };
  const endpoint = `http://127.0.0.1:${rgwPort}`;
  let gateway: ChildProcess | undefined;
  const startGateway = async () => {
    const child = daemon('radosgw', ['-n', 'client.rgw.gw'], 'rgw');
    gateway = child;
    const owned = () => child.pid !== undefined && holdsListener(child.pid, rgwPort);
    // A bound on each probe: a holder of the port that never answers must not stall the start.
    const probe = () =>
      fetch(`${endpoint}/`, { signal: AbortSignal.timeout(2_000) }).catch(() => undefined);
    try {
      await eventually(async () => {
        if (child.exitCode !== null) throw new Error(`radosgw exited: ${logTail(dir, 'rgw')}`);
        if (owned()) return (await probe())?.ok === true ? true : undefined;
        // An answer while radosgw holds no listener there (checked again after it, in case it
        // bound meanwhile) came from another process, which every client would then reach.
        if ((await probe()) !== undefined && !owned()) throw new PortTakenError(rgwPort);
        return undefined;
      }, STARTING);
    } catch (error: unknown) {
      if (error instanceof PortTakenError) throw error;
      // radosgw exits when it cannot bind: then the port, not the gateway, is the cause.
      if (!owned() && (await portIsTaken(rgwPort)))
        throw new PortTakenError(rgwPort, { cause: error });
      throw error;
    }
  };
  const stop = async () => {
    await Promise.all(daemons.reverse().map((child) => stopChild(child)));
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    await run('ceph-authtool', [
      '--create-keyring',
      join(dir, 'keyring'),
      '--gen-key',
      '-n',
      'mon.',
      '--cap',
      'mon',
      'allow *',
    ]);
    await run('monmaptool', [
      '--create',
      '--add',
      'a',
      `v1:127.0.0.1:${monPort}`,
      '--fsid',
      fsid,
      join(dir, 'monmap'),
    ]);
    await run('ceph-mon', ['--mkfs', '-i', 'a', '--monmap', join(dir, 'monmap'), '-c', conf]);
    daemon('ceph-mon', ['-i', 'a'], 'mon');
    // The OSD is created and placed in the CRUSH map here, not by itself at start: its own
    // commands can leave before it knows the cluster's fsid, which the monitor refuses ("wrong
    // fsid") about one start in four, and the OSD then never comes up.
    const osdUuid = randomUUID();
    await ceph('osd', 'create', osdUuid);
    await ceph('osd', 'crush', 'add', 'osd.0', '1.0', 'root=default');
    await run('ceph-osd', ['-i', '0', '--mkfs', '--osd-uuid', osdUuid, '-c', conf]);
    daemon('ceph-osd', ['-i', '0'], 'osd');
    // `ceph` fails while the monitor is still starting: that is "not yet".
    await eventually(async () => {
      const stat = await ceph('osd', 'stat').catch(() => undefined);
      return stat?.stdout.includes('1 up') === true ? true : undefined;
    }, STARTING);
    await startGateway();
    await run('radosgw-admin', [
      '-c',
      conf,
      'user',
      'create',
      '--uid=audio-webhooks',
      '--display-name=audio-webhooks',
      `--access-key=${ACCESS_KEY}`,
      `--secret-key=${SECRET_KEY}`,
    ]);
  } catch (error: unknown) {
    if (error instanceof PortTakenError) {
      await stop();
      throw error;
    }
    const osdLog = (() => {
      try {
        return readFileSync(join(dir, 'log', 'osd.0.log'), 'utf8')
          .split('\n')
          .slice(-15)
          .join('\n');
      } catch {
        return '(no OSD log)';
      }
    })();
    await stop();
    throw new Error(`${String(error)}\n--- osd.0.log ---\n${osdLog}`, { cause: error });
  }
  return {
    dir,
    endpoint,
    accessKeyId: ACCESS_KEY,
    secretAccessKey: SECRET_KEY,
    env: {
      AUDIO_STORE: 's3',
      S3_ENDPOINT: endpoint,
      S3_FORCE_PATH_STYLE: 'true',
      S3_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: ACCESS_KEY,
      AWS_SECRET_ACCESS_KEY: SECRET_KEY,
    },
    client: () =>
      new S3Client({
        region: 'us-east-1',
        endpoint,
        forcePathStyle: true,
        credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY },
        requestChecksumCalculation: 'WHEN_REQUIRED',
        responseChecksumValidation: 'WHEN_REQUIRED',
      }),
    async stopGateway() {
      if (gateway !== undefined) await stopChild(gateway);
    },
    startGateway,
    stop,
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

/**
 * Whether process `pid` holds the socket listening on 127.0.0.1:port. /proc/net/tcp names each
 * listener's socket inode (the address as the kernel stores it, the port in hex), and
 * /proc/<pid>/fd links to the sockets the process has open: a reply on the port proves nothing
 * when any server may have sent it. Linux only, as Debian's Ceph is.
 */
function holdsListener(pid: number, port: number): boolean {
  const loopback = endianness() === 'LE' ? '0100007F' : '7F000001';
  const local = `${loopback}:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  const LISTEN = '0A';
  const listeners = new Set(
    readFileSync('/proc/net/tcp', 'utf8')
      .split('\n')
      .map((line) => line.trim().split(/\s+/))
      .filter((fields) => fields[1] === local && fields[3] === LISTEN)
      .map((fields) => `socket:[${fields[9] ?? ''}]`),
  );
  if (listeners.size === 0) return false;
  const fds = `/proc/${pid}/fd`;
  let open: string[];
  try {
    open = readdirSync(fds);
  } catch {
    return false; // the process has exited: it holds nothing
  }
  return open.some((fd) => {
    try {
      return listeners.has(readlinkSync(`${fds}/${fd}`));
    } catch {
      return false; // closed since the listing
    }
  });
}

function logTail(dir: string, name: string): string {
  try {
    return readFileSync(join(dir, 'log', `${name}.exit`), 'utf8').slice(-500);
  } catch {
    return '(no output)';
  }
}
