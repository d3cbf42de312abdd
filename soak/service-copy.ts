import { cpSync, existsSync, mkdirSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** The repository's root, from soak/ or from dist-bench/soak/. */
export function repositoryRoot(from = __dirname): string {
  let dir = from;
  while (!existsSync(join(dir, 'package.json'))) dir = dirname(dir);
  return dir;
}

/**
 * Makes `<dir>` a runnable copy of the service as a fork runs it; returns the path of its
 * `dist/main.js`. The built `dist/` (npm run soak builds it first) is copied with the example's
 * custom event, `voice.converted`, as `dist/custom/events.js`: it downloads its audio like
 * audio.ready. The repository's `node_modules` is linked beside it; the checkout's own dist/ is
 * never written to.
 */
export function copyService(dir: string): string {
  const root = repositoryRoot();
  const main = join(root, 'dist', 'main.js');
  if (!existsSync(main)) throw new Error(`${main} is missing: npm run soak builds it first`);
  mkdirSync(dir, { recursive: true });
  cpSync(join(root, 'dist'), join(dir, 'dist'), { recursive: true });
  cpSync(join(root, 'package.json'), join(dir, 'package.json'));
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  mkdirSync(join(dir, 'dist', 'custom'), { recursive: true });
  // What the README tells a fork to do: src/examples/events.ts copied to src/custom/events.ts.
  cpSync(join(dir, 'dist', 'examples', 'events.js'), join(dir, 'dist', 'custom', 'events.js'));
  return join(dir, 'dist', 'main.js');
}
