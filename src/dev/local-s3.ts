import { execFileSync } from 'node:child_process';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { quietSdkNodeNotice } from '../storage/s3/s3-client.js';
import { PortTakenError, portIsTaken, startCephGateway } from './ceph-gateway.js';

/**
 * `npm run local-s3`: an S3-compatible server on this machine for trying AUDIO_STORE=s3 (Ceph's
 * RADOS Gateway on a one-node cluster whose objects live in memory, the same one the tests use),
 * a bucket in it, and the settings to use, as KEY=value lines on standard output and then
 * `ready`. It runs until Ctrl-C or SIGTERM, then stops every process it started and removes its
 * temp folder. LOCAL_S3_PORT (default 7480, radosgw's own) and LOCAL_S3_BUCKET (default `audio`)
 * change the port and the bucket. Progress and problems go to standard error. When another process
 * holds the port, it prints no settings and exits 1: they would point at that process.
 */
const NEEDED = {
  'ceph-mon': 'ceph-mon',
  'ceph-osd': 'ceph-osd',
  radosgw: 'radosgw',
  'radosgw-admin': 'radosgw',
  ceph: 'ceph-common',
  'ceph-authtool': 'ceph-common',
  monmaptool: 'ceph-common',
} as const;

function missingPackages(): string[] {
  const missing = new Set<string>();
  for (const [command, debianPackage] of Object.entries(NEEDED)) {
    try {
      execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    } catch {
      missing.add(debianPackage);
    }
  }
  return [...missing];
}

function fail(message: string): never {
  process.stderr.write(`local-s3: ${message}\n`);
  process.exit(1);
}

async function main(): Promise<void> {
  const missing = missingPackages();
  if (missing.length > 0)
    fail(
      `Ceph's RADOS Gateway is not installed; on Debian or Ubuntu: sudo apt-get install --no-install-recommends ${missing.join(' ')}`,
    );
  const port = Number(process.env.LOCAL_S3_PORT ?? 7480);
  const bucket = process.env.LOCAL_S3_BUCKET ?? 'audio';
  if (!Number.isInteger(port) || port < 1 || port > 65535) fail('LOCAL_S3_PORT must be a port');
  const portTaken = () =>
    fail(
      `port ${port} (LOCAL_S3_PORT) is taken by another process; set LOCAL_S3_PORT to a free port`,
    );
  // Asked now to spare a 15 s start; the gateway checks again that radosgw itself holds the port,
  // since something may take it while Ceph starts.
  const taken = await portIsTaken(port).catch((error: unknown) =>
    fail(`cannot listen on port ${port} (LOCAL_S3_PORT): ${String(error)}`),
  );
  if (taken) portTaken();
  // The SDK's own notice is nine lines among these one-line ones: said here as one.
  const sdkNotice = quietSdkNodeNotice();
  if (sdkNotice !== undefined) process.stderr.write(`local-s3: ${sdkNotice}\n`);
  process.stderr.write(
    'local-s3: starting Ceph (a monitor, an in-memory OSD, radosgw): about 15 s\n',
  );
  const gateway = await startCephGateway({ port }).catch((error: unknown) =>
    error instanceof PortTakenError
      ? portTaken()
      : fail(
          `could not start: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`,
        ),
  );
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    process.stderr.write('local-s3: stopping\n');
    void gateway.stop().then(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  const client = gateway.client();
  try {
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
  } catch (error: unknown) {
    await gateway.stop();
    fail(`could not create the bucket ${bucket}: ${String(error)}`);
  } finally {
    client.destroy();
  }
  const settings = {
    AUDIO_STORE: 's3',
    S3_ENDPOINT: gateway.endpoint,
    S3_BUCKET: bucket,
    S3_FORCE_PATH_STYLE: 'true',
    AWS_ACCESS_KEY_ID: gateway.accessKeyId,
    AWS_SECRET_ACCESS_KEY: gateway.secretAccessKey,
    AWS_REGION: 'us-east-1',
  };
  process.stderr.write(
    `local-s3: bucket ${bucket} at ${gateway.endpoint}; its objects live in memory and go when this stops (Ctrl-C). Data folder: ${gateway.dir}\n`,
  );
  process.stdout.write(
    `${Object.entries(settings)
      .map(([key, value]) => `${key}=${value}`)
      .join('\n')}\nready\n`,
  );
}

void main();
