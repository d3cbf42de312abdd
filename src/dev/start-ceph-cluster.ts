import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { eventually } from '../util/eventually.js';
import { STARTING, type CephDaemons } from './ceph-daemons.js';

const run = promisify(execFile);

/**
 * Makes the monitor and the OSD of the cluster `conf` describes, starts both with `daemons`, and
 * waits until the OSD is up: what radosgw needs before it can start.
 */
export async function startCephCluster({
  dir,
  conf,
  fsid,
  monPort,
  daemons,
}: {
  dir: string;
  conf: string;
  fsid: string;
  monPort: number;
  daemons: CephDaemons;
}): Promise<void> {
  const ceph = (...args: string[]) =>
    run('ceph', ['-c', conf, '--connect-timeout', '10', ...args], { timeout: 20_000 });
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
  daemons.start('ceph-mon', ['-i', 'a'], 'mon');
  // Until the monitor has formed its quorum of one, commands fail (EPERM "problem getting
  // command descriptions", seen with two clusters starting at once on 2 cores): that is "not
  // yet" too.
  await untilAnswered(ceph, 'quorum_status');
  // The OSD is created and placed in the CRUSH map here, not by itself at start: its own
  // commands can leave before it knows the cluster's fsid, which the monitor refuses ("wrong
  // fsid") about one start in four, and the OSD then never comes up.
  // Both are asked again while the monitor is too busy to answer in time (a loaded machine):
  // the same uuid names the same OSD, and adding it to the CRUSH map again changes nothing.
  const osdUuid = randomUUID();
  await untilAnswered(ceph, 'osd', 'create', osdUuid);
  await untilAnswered(ceph, 'osd', 'crush', 'add', 'osd.0', '1.0', 'root=default');
  await run('ceph-osd', ['-i', '0', '--mkfs', '--osd-uuid', osdUuid, '-c', conf]);
  daemons.start('ceph-osd', ['-i', '0'], 'osd');
  // `ceph` fails while the monitor is still starting: that is "not yet".
  await eventually(async () => {
    const stat = await ceph('osd', 'stat').catch(() => undefined);
    return stat?.stdout.includes('1 up') === true ? true : undefined;
  }, STARTING);
}

/** Runs a `ceph` command that changes nothing when repeated until it succeeds; after STARTING, fails with its last error. */
async function untilAnswered(
  ceph: (...args: string[]) => Promise<unknown>,
  ...args: string[]
): Promise<void> {
  let last: unknown;
  await eventually(async () => {
    try {
      await ceph(...args);
      return true;
    } catch (error: unknown) {
      last = error;
      return undefined;
    }
  }, STARTING).catch((error: unknown) => {
    const reason = last instanceof Error ? last.message : String(last ?? error);
    throw new Error(`ceph ${args.join(' ')}: ${reason}`, { cause: error });
  });
}
