/** One path segment the archive makes: no leading dot, so never `..`, `.` or a temp file's name. */
const SEGMENT = /^[A-Za-z0-9_~-][A-Za-z0-9._~-]{0,254}$/;

/**
 * The segments of an archive path, refused unless every one is a plain name: a store joins them
 * under its own folder, and a path that could climb out of it is a bug, never a file.
 * `folder`: '' (the top) or names each ending in `/`.
 */
export function archiveSegments(path: string, kind: 'file' | 'folder'): string[] {
  if (kind === 'folder' && path === '') return [];
  const body = kind === 'folder' ? (path.endsWith('/') ? path.slice(0, -1) : undefined) : path;
  const segments = body?.split('/');
  if (segments === undefined || !segments.every((segment) => SEGMENT.test(segment)))
    throw new Error(`not an archive ${kind} path: ${JSON.stringify(path)}`);
  return segments;
}
