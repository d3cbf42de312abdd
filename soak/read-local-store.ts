import { createHash } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { StoredEntry } from './observations.js';
import { archiveEntryOf, type StoreContents } from './archive-lines.js';

/**
 * What a local AUDIO_DIR holds, read straight from the files (not through the service's store):
 * each `<stem>.json` metadata file, the SHA-256 of the audio it names, every archive entry under
 * `.archive/` (a line of a `.ndjson` segment or batch, or a `.json` entry file; the TTS cache's
 * folder is not the archive), and what should not be there.
 */
export async function readLocalStore(audioDir: string): Promise<StoreContents> {
  const names = existsSync(audioDir) ? await readdir(audioDir) : [];
  const store: StoredEntry[] = [];
  const strays: string[] = [];
  const named = new Set<string>();
  for (const name of names) {
    if (name === '.archive') continue;
    if (name.startsWith('.')) {
      strays.push(name);
      continue;
    }
    if (!name.endsWith('.json')) continue;
    const metadata = JSON.parse(await readFile(join(audioDir, name), 'utf8')) as {
      id: string;
      event: string;
      file: string;
      sha256: string;
    };
    named.add(metadata.file);
    const audio = join(audioDir, metadata.file);
    store.push({
      event: metadata.event,
      id: metadata.id,
      metadataSha256: metadata.sha256,
      ...(existsSync(audio) ? { contentSha256: await fileSha256(audio) } : {}),
    });
  }
  for (const name of names)
    if (!name.startsWith('.') && !name.endsWith('.json') && !named.has(name)) strays.push(name);
  const archive = [];
  let unreadableArchive = 0;
  const archiveDir = join(audioDir, '.archive');
  const paths = existsSync(archiveDir)
    ? await readdir(archiveDir, { recursive: true, encoding: 'utf8' })
    : [];
  for (const path of paths) {
    if (path.startsWith('tts-cache') || !(path.endsWith('.ndjson') || path.endsWith('.json')))
      continue;
    const full = join(archiveDir, path);
    if (!(await stat(full)).isFile()) continue;
    const text = await readFile(full, 'utf8');
    const lines = path.endsWith('.json') ? [text] : text.split('\n').filter((l) => l !== '');
    for (const line of lines) {
      const entry = archiveEntryOf(line);
      if (entry === undefined) unreadableArchive += 1;
      else archive.push(entry);
    }
  }
  return { store, archive, strays, unreadableArchive };
}

async function fileSha256(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
