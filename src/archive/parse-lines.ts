import { parseEntry, type EntryRead } from './parse-entry.js';

/**
 * A segment's or a batch's entries, one per line, each named `<path>:<line>`. A last line without
 * its newline is being appended as it is read, or was when its writer stopped (a crash, a full
 * disk): reported, never replayed. (A batch is written whole, so never has one.)
 */
export function parseLines(path: string, bytes: Uint8Array): EntryRead[] {
  const lines = Buffer.from(bytes).toString('utf8').split('\n');
  const last = lines.pop() ?? '';
  const entries = lines.map((line, at) => parseEntry(`${path}:${at + 1}`, line));
  if (last !== '')
    entries.push({
      unreadable: {
        path: `${path}:${lines.length + 1}`,
        reason: 'an unfinished line (being appended as it was read, or its writer stopped then)',
      },
    });
  return entries;
}
