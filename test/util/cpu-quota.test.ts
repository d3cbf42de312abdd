import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { cpusInQuota } from '../../src/util/cpu-quota';

/** A fake /sys/fs/cgroup holding the given files. */
function cgroup(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'aw-cgroup-'));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), `${text}\n`);
  }
  return root;
}

const cores = availableParallelism();

it('cgroup v2: a quota of 1.5 CPUs is 2 processes (rounded up), never more than the cores', () => {
  expect(cpusInQuota(cgroup({ 'cpu.max': '150000 100000' }))).toBe(Math.min(cores, 2));
  expect(cpusInQuota(cgroup({ 'cpu.max': '50000 100000' }))).toBe(1);
  expect(cpusInQuota(cgroup({ 'cpu.max': '6400000 100000' }))).toBe(cores);
});

it('cgroup v1: cfs quota over period; -1 means no quota', () => {
  expect(
    cpusInQuota(cgroup({ 'cpu/cpu.cfs_quota_us': '100000', 'cpu/cpu.cfs_period_us': '100000' })),
  ).toBe(1);
  expect(
    cpusInQuota(cgroup({ 'cpu/cpu.cfs_quota_us': '-1', 'cpu/cpu.cfs_period_us': '100000' })),
  ).toBe(cores);
});

it('no quota ("max", or no cgroup files): the CPUs this process may run on', () => {
  expect(cpusInQuota(cgroup({ 'cpu.max': 'max 100000' }))).toBe(cores);
  expect(cpusInQuota(cgroup({}))).toBe(cores);
});
