/**
 * Group commit: wraps an operation that covers every request made before it started (an fsync
 * of a directory, a Redis WAIT) so that many callers share it. A caller is covered by the first
 * run that starts after it asked, so callers arriving while one runs share the next one, and at
 * most one run waits behind the running one. Each caller gets the result of the run that covers
 * it; a failed run fails its callers only.
 */
export function groupCommit<T>(run: () => Promise<T>): () => Promise<T> {
  let running: Promise<T> | undefined;
  let next: Promise<T> | undefined;
  const start = (): Promise<T> => {
    const current: Promise<T> = run().finally(() => {
      if (running === current) running = undefined;
    });
    running = current;
    return current;
  };
  return () => {
    // One already waits to start after the running one: it will cover this caller too.
    if (next !== undefined) return next;
    if (running === undefined) return start();
    const settled = running.then(
      () => undefined,
      () => undefined,
    );
    next = settled.then(() => {
      next = undefined;
      return start();
    });
    return next;
  };
}
