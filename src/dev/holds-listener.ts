import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { endianness } from 'node:os';

/**
 * Whether process `pid` holds the socket listening on 127.0.0.1:port. /proc/net/tcp names each
 * listener's socket inode (the address as the kernel stores it, the port in hex), and
 * /proc/<pid>/fd links to the sockets the process has open: a reply on the port proves nothing
 * when any server may have sent it. Linux only, as Debian's Ceph is.
 */
export function holdsListener(pid: number, port: number): boolean {
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
