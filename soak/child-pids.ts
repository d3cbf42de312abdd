import { readdirSync, readFileSync } from 'node:fs';

/**
 * The PIDs whose parent is `parent`, from /proc (Linux): how the soak finds the receiver's
 * processes under its cluster primary, to SIGKILL one as a crash would.
 */
export function childPids(parent: number): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // `pid (comm) state ppid …`: comm may hold spaces and parentheses; the last ")" ends it.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === parent) found.push(Number(name));
    } catch {
      // Gone between the listing and the read.
    }
  }
  return found;
}
