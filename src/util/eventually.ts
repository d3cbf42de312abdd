/**
 * Asks `check` every `everyMs` until it gives a value, for up to `timeoutMs`: for what another
 * process does, which this one can only look at (a daemon coming up, a file appearing).
 */
export async function eventually<T>(
  check: () => Promise<T | undefined>,
  { timeoutMs = 30_000, everyMs = 100 } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`not reached within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
