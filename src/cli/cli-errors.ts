/** Bad arguments: one line, then where to read the command's usage; exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** A variable the command needs is not set: one line naming it and what to set, exit code 2. */
export class MissingSettingError extends Error {
  override name = 'MissingSettingError';
}

/** Something outside is unreachable or refused (Redis, the URL): one line, exit code 1. */
export class OperationalError extends Error {
  override name = 'OperationalError';
}

/** An error's message alone, for a line the CLI prints to a person (read by shape, not `instanceof`). */
export function messageOf(error: unknown): string {
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? message : String(error);
}
