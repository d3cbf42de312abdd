/**
 * THE backoff formula of the service: the n-th wait after a failure is `firstMs · 2ⁿ⁻¹`, at most
 * `maxMs`, with jitter so that what failed together does not retry together. Jobs (deliveries,
 * forwards), the provider client and the receiver's process restarts each give their own
 * numbers to this one formula.
 */
export interface Backoff {
  /** The first wait, before jitter. */
  readonly firstMs: number;
  /** The longest wait, before jitter. @defaultValue no limit */
  readonly maxMs?: number;
  /**
   * `equal`: half fixed, half random (a wait never far below its step, for jobs that must not
   * hammer); `full`: anywhere from 0 to the step (AWS's, for many clients sharing a limit);
   * `none`: the step itself.
   */
  readonly jitter: 'equal' | 'full' | 'none';
}

/** The wait after `failures` failures in a row (1 after the first), in whole ms. */
export function backoffDelay(failures: number, backoff: Backoff, random = Math.random): number {
  const step = Math.min(
    backoff.maxMs ?? Infinity,
    backoff.firstMs * 2 ** Math.max(0, failures - 1),
  );
  switch (backoff.jitter) {
    case 'equal':
      return Math.round(step / 2 + random() * (step / 2));
    case 'full':
      return Math.round(random() * step);
    case 'none':
      return Math.round(step);
  }
}
