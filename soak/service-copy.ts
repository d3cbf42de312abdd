import { cpSync, existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * The service as a fork runs it: the built `dist/` (npm run soak builds it first) copied into
 * the run's folder with a `dist/custom/events.js` of its own, the repository's `node_modules`
 * linked beside it. The custom event, `voice.converted`, downloads its audio like audio.ready
 * (the framework's guarded download into the store), as src/examples/events.ts shows a fork how.
 * The checkout's own dist/ is never written to.
 */
export const CUSTOM_EVENTS_JS = `'use strict';
// Written by soak/service-copy.ts: the soak's fork event (see src/examples/events.ts).
const { z } = require('zod');
const { defineEvent } = require('../index.js');
exports.events = [
  defineEvent({
    name: 'voice.converted',
    data: z.looseObject({
      id: z.string().min(1),
      audio_url: z.url({ protocol: /^https$/ }),
      voice: z.string().min(1),
    }),
    async handle(event, { downloadAudio }) {
      await downloadAudio(event.data.audio_url, {
        id: event.data.id,
        details: { voice: event.data.voice },
      });
    },
  }),
];
`;

/** The repository's root, from soak/ or from dist-bench/soak/. */
export function repositoryRoot(from = __dirname): string {
  let dir = from;
  while (!existsSync(join(dir, 'package.json'))) dir = dirname(dir);
  return dir;
}

/** Makes `<dir>` a runnable copy; returns the path of its `dist/main.js`. */
export function copyService(dir: string): string {
  const root = repositoryRoot();
  const main = join(root, 'dist', 'main.js');
  if (!existsSync(main)) throw new Error(`${main} is missing: npm run soak builds it first`);
  mkdirSync(dir, { recursive: true });
  cpSync(join(root, 'dist'), join(dir, 'dist'), { recursive: true });
  cpSync(join(root, 'package.json'), join(dir, 'package.json'));
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  mkdirSync(join(dir, 'dist', 'custom'), { recursive: true });
  writeFileSync(join(dir, 'dist', 'custom', 'events.js'), CUSTOM_EVENTS_JS);
  return join(dir, 'dist', 'main.js');
}
