import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * The local store's disk: a tmpfs of its own (root only), so that "full" is this store's full
 * and never the machine's. `fill` takes every free block (fallocate, then small writes until
 * ENOSPC), `free` gives them back.
 */
export interface SmallDisk {
  readonly dir: string;
  fill(): Promise<void>;
  free(): void;
  unmount(): Promise<void>;
}

export async function mountSmallDisk(dir: string, bytes: number): Promise<SmallDisk> {
  mkdirSync(dir, { recursive: true });
  await run('mount', ['-t', 'tmpfs', '-o', `size=${bytes},mode=0755`, 'tmpfs', dir]);
  const fillers = join(dir, 'filler');
  mkdirSync(fillers, { recursive: true });
  let n = 0;
  return {
    dir,
    async fill() {
      // In steps, each from a fresh look at what is free: the workers write meanwhile, and a
      // tmpfs fallocate is all or nothing (one of all the free space failed, ENOSPC, under load).
      for (let step = 0; step < 200; step += 1) {
        const stats = statfsSync(dir);
        const free = stats.bavail * stats.bsize;
        if (free < 1024 ** 2) break;
        const size = Math.max(512 * 1024, Math.floor(free / 2));
        await run('fallocate', ['-l', String(size), join(fillers, `big-${(n += 1)}`)]).catch(
          () => undefined,
        );
      }
      // The last blocks, a page at a time, until the kernel says no more.
      for (let i = 0; i < 1_000; i += 1) {
        try {
          writeFileSync(join(fillers, `small-${(n += 1)}`), Buffer.alloc(4096));
        } catch {
          return;
        }
      }
    },
    free() {
      rmSync(fillers, { recursive: true, force: true });
      mkdirSync(fillers, { recursive: true });
    },
    async unmount() {
      // A process that still has a file open there keeps it busy: lazily, then.
      await run('umount', [dir]).catch(() => run('umount', ['-l', dir]));
    },
  };
}
