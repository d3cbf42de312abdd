/**
 * An error as one line of a reason (a forward's, the store's): its message, and the code that
 * says what kind of trouble it is (`ECONNREFUSED`, an S3 error's name such as `AccessDenied`),
 * its own or its cause's, where the message does not already hold it. Read by shape rather than
 * `instanceof`, which fails across VM realms.
 */
export function describeError(error: unknown): string {
  const message = (error as { message?: unknown } | null)?.message;
  if (typeof message !== 'string') return String(error);
  const code = codeOf(error) ?? codeOf((error as { cause?: unknown }).cause);
  return code === undefined || message.includes(code) ? message : `${message} (${code})`;
}

function codeOf(error: unknown): string | undefined {
  const { code, name } = (error ?? {}) as { code?: unknown; name?: unknown };
  if (typeof code === 'string') return code;
  // The AWS SDK's service errors carry their code as the name (NoSuchBucket, SlowDown).
  const named = typeof name === 'string' && /^[A-Z][A-Za-z]+$/.test(name) ? name : undefined;
  return named === undefined || /Error$/.test(named) ? undefined : named;
}
