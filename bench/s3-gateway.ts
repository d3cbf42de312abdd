/**
 * The S3 gateway as the stores section measures it: on a core of its own, and its requests
 * counted. Ceph's daemons (radosgw, and the monitor and OSD behind it) are pinned to the last
 * CPU with taskset(1); this process and the bench's Redis to the others, so every process started
 * meanwhile (the receiver, the service's worker, the naive workers) inherits them too. Both sides
 * of each S3 ratio then run with the gateway on its core, not taking the worker's.
 */
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

const GATEWAY = new Set(['radosgw', 'ceph-osd', 'ceph-mon']);

/** This process's children with one of `names`, from /proc (Linux). */
function childrenNamed(names: ReadonlySet<string>): number[] {
  return readdirSync('/proc').flatMap((entry) => {
    if (!/^\d+$/.test(entry)) return [];
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      return [];
    }
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    return ppid === process.pid && names.has(name) ? [Number(entry)] : [];
  });
}

/** Every thread of `pid` onto `list` (taskset's CPU list). */
const pin = (pid: number, list: string) => run('taskset', ['-a', '-p', '-c', list, String(pid)]);

export interface Pinned {
  /** What was pinned where, as printed. */
  readonly description: string;
  /** This process and the bench's Redis back on every CPU. */
  restore(): Promise<void>;
}

/** Pins the gateway to the last CPU and this process and the bench's Redis to the others. */
export async function pinGateway(): Promise<Pinned> {
  const count = cpus().length;
  const gateway = childrenNamed(GATEWAY);
  const rest = [process.pid, ...childrenNamed(new Set(['redis-server']))];
  if (count < 2 || gateway.length === 0)
    return { description: 'the gateway not pinned (one CPU)', restore: () => Promise.resolve() };
  const last = String(count - 1);
  const others = count === 2 ? '0' : `0-${count - 2}`;
  for (const pid of gateway) await pin(pid, last);
  for (const pid of rest) await pin(pid, others);
  return {
    description: `the gateway (${gateway.length} Ceph daemons) on CPU ${last}; the bench, Redis, receiver and workers on CPU ${others}`,
    restore: async () => {
      for (const pid of rest) await pin(pid, `0-${count - 1}`);
    },
  };
}

/**
 * The gateway's requests so far: radosgw's `req` counter (`perf dump` on its admin socket, the
 * one `ceph daemon` speaks: the command, a NUL, then a 4-byte big-endian length and the answer).
 */
export async function gatewayRequests(cephDir: string): Promise<number> {
  const socket = createConnection(join(cephDir, 'run', 'client.rgw.gw.asok'));
  const chunks: Buffer[] = [];
  const answer = new Promise<Buffer>((resolve, reject) => {
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('end', () => {
      resolve(Buffer.concat(chunks));
    });
    socket.on('error', reject);
  });
  socket.end('{"prefix": "perf dump"}\0');
  const bytes = await answer;
  const perf = JSON.parse(bytes.subarray(4).toString('utf8')) as { rgw?: { req?: number } };
  const requests = perf.rgw?.req;
  if (requests === undefined) throw new Error('radosgw perf dump holds no rgw.req');
  return requests;
}
