/** Bad arguments: the usage text follows, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** Something outside is unreachable or refused (Redis, the URL): one line, exit code 1. */
export class OperationalError extends Error {
  override name = 'OperationalError';
}

/** An error's message, read by shape rather than `instanceof`, which fails across VM realms. */
export function describeError(error: unknown): string {
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? message : String(error);
}
