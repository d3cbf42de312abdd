import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/**
 * File descriptors kept back from MAX_CONNECTIONS's default for everything else a receiver
 * process opens: its Redis connections, the store, logs, the cluster's channels.
 */
export const RESERVED_FILES = 512;

/**
 * This process's open-file limit (the soft RLIMIT_NOFILE), as read now; undefined when it cannot
 * be read. Node has no API for it. On Linux /proc/self/limits holds it, a file read without a
 * fork; Node raises its soft limit to the hard one as it starts, so this is the limit the
 * process actually runs under. Elsewhere a shell's `ulimit -n` reports the limit it inherited
 * from this process: one fork, once, at start. `unlimited` is read as no limit.
 */
export function openFileLimit(limitsFile = '/proc/self/limits'): number | undefined {
  let text: string | undefined;
  try {
    text = /^Max open files\s+(\S+)/m.exec(readFileSync(limitsFile, 'utf8'))?.[1];
  } catch {
    try {
      text = execFileSync('/bin/sh', ['-c', 'ulimit -n'], { encoding: 'utf8', timeout: 2_000 });
    } catch {
      return undefined;
    }
  }
  const value = text?.trim();
  if (value === 'unlimited') return Number.MAX_SAFE_INTEGER;
  return value !== undefined && /^\d+$/.test(value) ? Number(value) : undefined;
}

/**
 * MAX_CONNECTIONS=auto: the open-file limit less RESERVED_FILES, never under RESERVED_FILES (a
 * process at the traditional 1024 still takes 512), capped at `max`. Each receiver process of
 * WEB_CONCURRENCY reads its own limit. The cap exists for the descriptors, not for the clients:
 * an idle connection costs one until the header timeout closes it, so a cap far below the limit
 * lets one client holding idle sockets turn every other client away.
 */
export function connectionsFromLimit(limit: number | undefined, max: number): number {
  if (limit === undefined) return RESERVED_FILES;
  return Math.min(max, Math.max(RESERVED_FILES, limit - RESERVED_FILES));
}
