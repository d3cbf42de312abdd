import { createHash, randomBytes } from 'node:crypto';
import { readlinkSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { hostname } from 'node:os';

/**
 * THE temp-file name of every local area (audio, archive, TTS cache, the CLI's files):
 * `.partial-<writer>-<pid>-<random><counter>`. `<writer>` is a hash of the host name and the PID
 * namespace: under Docker every container's node is PID 1, and worker pods share AUDIO_DIR, so
 * `.partial-<pid>-<counter>` made two writers pick one name and the loser remove the winner's
 * temp. Random per process, then a counter: unique without asking the kernel for entropy per
 * file, which costs CPU on every write (docs/performance-history.md, "Figures behind the code"); and every
 * writer opens with 'wx', which refuses a clash anyway.
 */
export const WRITER_TAG = createHash('sha256')
  .update(`${hostname()}\0${pidNamespace()}`)
  .digest('hex')
  .slice(0, 8);
const PREFIX = `.partial-${WRITER_TAG}-${process.pid}-${randomBytes(6).toString('hex')}`;
const TEMP = /^\.partial-([0-9a-f]{8})-(\d+)-[0-9a-f]+$/;
let counter = 0;

/** The PID namespace (Linux): two processes see each other's PIDs only within one. */
function pidNamespace(): string {
  try {
    return readlinkSync('/proc/self/ns/pid');
  } catch {
    return '';
  }
}

/** True for a name tempName made (this process's or another's): a file not yet whole. */
export function isTempName(name: string): boolean {
  return name.startsWith('.partial-');
}

export function tempName(): string {
  counter++;
  return `${PREFIX}${counter.toString(16).padStart(4, '0')}`;
}

/** A temp file from another host or PID namespace is only presumed dead after this long. */
const FOREIGN_TEMP_MAX_AGE_MS = 24 * 3600 * 1000;

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error: unknown) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * True when `name` is a temp file its writer will never finish: written in this host and PID
 * namespace by a process that is gone (one with this process's PID is an earlier incarnation),
 * or elsewhere and untouched for a day (a restarted container has a new PID namespace, so its
 * predecessor's temps wait that day). False for a live writer's temp, this process's included.
 */
export async function isAbandonedTemp(name: string, path: string): Promise<boolean> {
  const match = TEMP.exec(name);
  if (match === null) return false;
  const [, writer, pid] = match;
  if (writer === WRITER_TAG) {
    if (name.startsWith(PREFIX)) return false;
    return Number(pid) === process.pid || !isAlive(Number(pid));
  }
  // On a shared volume another pod renames its temp file away between a readdir and this stat:
  // that ENOENT is no trouble of this process's, and must not stop its start.
  const info = await stat(path).catch((error: unknown) => {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  });
  return info !== undefined && Date.now() - info.mtimeMs > FOREIGN_TEMP_MAX_AGE_MS;
}
