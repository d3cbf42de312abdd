import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { audioExtension, fileStem } from '../../src/storage/file-name';

const hashed = (id: string) => `~${createHash('sha256').update(id).digest('hex')}`;

describe('fileStem', () => {
  it.each(['item-1', 'abc_DEF.123', 'a'.repeat(128)])('keeps the plain id %s', (id) => {
    expect(fileStem(id)).toBe(id);
  });

  it.each([
    '../../etc/passwd',
    '/abs',
    '.hidden',
    '..',
    '.',
    'a b',
    'a\u0000b',
    'ünïcode',
    'x'.repeat(129),
    'a/b',
    'C:\\x',
  ])('encodes the unsafe id %j', (id) => {
    expect(fileStem(id)).toBe(hashed(id));
  });

  it('never yields a path separator, a leading dot or an over-long name', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (id) => {
        const stem = fileStem(id);
        return (
          !stem.includes('/') && !stem.startsWith('.') && stem.length <= 128 + 1 && stem.length > 0
        );
      }),
    );
  });
});

describe('audioExtension', () => {
  const url = (path: string) => new URL(`https://cdn.example.com${path}`);
  it.each([
    ['/a/b.mp3', 'audio/wav', '.mp3'],
    ['/a/b.WAV', 'audio/mpeg', '.wav'],
    ['/a/b', 'audio/mpeg', '.mp3'],
    ['/a/b', 'audio/ogg', '.ogg'],
    ['/a/b', 'application/octet-stream', '.bin'],
    ['/a/b.json', 'audio/mpeg', '.mp3'],
    ['/a/b.json', 'application/octet-stream', '.bin'],
    ['/a/b.toolongextension', 'audio/flac', '.flac'],
  ])('%s as %s → %s', (path, type, ext) => {
    expect(audioExtension(url(path), type)).toBe(ext);
  });
});
