import { createHash } from 'node:crypto';

const SAFE = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/;

/**
 * The file name stem for an item id. A plain id is used as is; anything else (slashes, dots in
 * front, spaces, non-ASCII, over 128 characters) becomes `~` + its SHA-256, so an id can never
 * name a path. `~` is outside the plain set: the two forms cannot collide. The metadata JSON keeps
 * the original id.
 */
export function fileStem(id: string): string {
  return SAFE.test(id) ? id : `~${createHash('sha256').update(id, 'utf8').digest('hex')}`;
}

const BY_CONTENT_TYPE: Readonly<Record<string, string>> = {
  'audio/mpeg': '.mp3',
  'audio/mp3': '.mp3',
  'audio/wav': '.wav',
  'audio/x-wav': '.wav',
  'audio/wave': '.wav',
  'audio/ogg': '.ogg',
  'audio/opus': '.opus',
  'audio/flac': '.flac',
  'audio/x-flac': '.flac',
  'audio/aac': '.aac',
  'audio/mp4': '.m4a',
  'audio/x-m4a': '.m4a',
  'audio/webm': '.webm',
  'audio/basic': '.au',
  'audio/l16': '.pcm',
  'audio/pcm': '.pcm',
};

/**
 * The audio file's extension: the URL path's (`.mp3`), else one from the content type, else
 * `.bin`. `.json` is never used for audio: that name belongs to the metadata file.
 */
export function audioExtension(url: URL, contentType: string): string {
  const match = /(\.[A-Za-z0-9]{1,10})$/.exec(url.pathname);
  const fromPath = match?.[1]?.toLowerCase();
  if (fromPath !== undefined && fromPath !== '.json') return fromPath;
  return BY_CONTENT_TYPE[contentType] ?? '.bin';
}
