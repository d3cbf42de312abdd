/** A Redis URL fit for a log line or an error message: the password never is. */
export function redactUrl(raw: string): string {
  try {
    const url = new URL(raw);
    if (url.password) url.password = '***';
    return url.href;
  } catch {
    return '(unparseable URL)';
  }
}
