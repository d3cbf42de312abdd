import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Writes `<dir>/ceph.conf`, the cluster startCephGateway describes, every daemon on loopback and
 * radosgw serving S3 on 127.0.0.1:rgwPort, and makes the folders it names. Returns the file's
 * path.
 */
export function writeCephConf({
  dir,
  fsid,
  monPort,
  rgwPort,
  memstoreBytes,
}: {
  dir: string;
  fsid: string;
  monPort: number;
  rgwPort: number;
  memstoreBytes: number;
}): string {
  const conf = join(dir, 'ceph.conf');
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
      // With auth off, anyone who reaches a daemon owns the cluster: every daemon binds to
      // loopback. Without an address or a network to pick one from, the OSD binds to 0.0.0.0.
      'public addr = 127.0.0.1',
      'cluster addr = 127.0.0.1',
      'public network = 127.0.0.0/8',
      'cluster network = 127.0.0.0/8',
      'ms bind ipv4 = true',
      'ms bind ipv6 = false',
      'ms bind msgr1 = true',
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
  return conf;
}
