import { execFile, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createServer } from 'node:net';
import { S3Client } from '@aws-sdk/client-s3';
import { eventually } from '../util/eventually.js';
import { cephDaemons, STARTING } from './ceph-daemons.js';
import { holdsListener } from './holds-listener.js';
import { startCephCluster } from './start-ceph-cluster.js';
import { writeCephConf } from './write-ceph-conf.js';

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
  override name = 'PortTakenError';
  constructor(
    readonly port: number,
    options?: ErrorOptions,
  ) {
    super(`port ${port} on 127.0.0.1 is taken by another process`, options);
  }
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
  const fsid = randomUUID();
  const conf = writeCephConf({ dir, fsid, monPort, rgwPort, memstoreBytes });
  const daemons = cephDaemons(conf, dir);
  const endpoint = `http://127.0.0.1:${rgwPort}`;
  let gateway: ChildProcess | undefined;
  const startGateway = async () => {
    const child = daemons.start('radosgw', ['-n', 'client.rgw.gw'], 'rgw');
    gateway = child;
    const owned = () => child.pid !== undefined && holdsListener(child.pid, rgwPort);
    // A bound on each probe: a holder of the port that never answers must not stall the start.
    const probe = () =>
      fetch(`${endpoint}/`, { signal: AbortSignal.timeout(2_000) }).catch(() => undefined);
    try {
      await eventually(async () => {
        if (child.exitCode !== null)
          throw new Error(`radosgw exited: ${daemons.exitOutput('rgw')}`);
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
    await daemons.stopAll();
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    await startCephCluster({ dir, conf, fsid, monPort, daemons });
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
      if (gateway !== undefined) await daemons.stop(gateway);
    },
    startGateway,
    stop,
  };
}

/** A loopback port nothing listens on at this moment (the OS picks it). */
export function probePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (typeof address === 'object' && address) resolve(address.port);
        else reject(new Error('no port'));
      });
    });
  });
}

/**
 * Whether 127.0.0.1:port cannot be bound now because something listens there (local-s3 asks it
 * before starting a gateway).
 */
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
