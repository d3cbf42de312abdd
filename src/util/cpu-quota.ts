import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

/**
 * CPUs this process may use: the CPUs it may run on (affinity), capped by the container's CPU
 * quota (cgroup v2 `cpu.max`, or v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`) rounded up.
 * os.availableParallelism() alone sees the node's cores, not a Kubernetes `limits.cpu: 1`.
 */
export function cpusInQuota(cgroupRoot = '/sys/fs/cgroup'): number {
  const cores = availableParallelism();
  const quota = cgroupV2Quota(cgroupRoot) ?? cgroupV1Quota(cgroupRoot);
  return quota === undefined ? cores : Math.max(1, Math.min(cores, Math.ceil(quota)));
}

function read(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** `cpu.max` is "<quota> <period>" or "max <period>". */
function cgroupV2Quota(root: string): number | undefined {
  const [quota, period] = (read(`${root}/cpu.max`) ?? '').split(/\s+/);
  return ratioOf(quota, period);
}

function cgroupV1Quota(root: string): number | undefined {
  return ratioOf(read(`${root}/cpu/cpu.cfs_quota_us`), read(`${root}/cpu/cpu.cfs_period_us`));
}

function ratioOf(quota: string | undefined, period: string | undefined): number | undefined {
  const q = Number(quota);
  const p = Number(period);
  return Number.isFinite(q) && Number.isFinite(p) && q > 0 && p > 0 ? q / p : undefined;
}
