import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

// The arrows of the house run one way (the README's layout): what the receiver and the worker's
// health server share (http/) never reaches up into the receiver (web/); the service's core never
// imports the sandbox or the provider client; and no module imports itself through a circle.
const SRC = join(__dirname, '..', '..', 'src');

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? files(join(dir, entry.name))
      : entry.name.endsWith('.ts')
        ? [join(dir, entry.name)]
        : [],
  );
}

/** The `src/` files a file imports (relative imports only), as paths relative to `src/`. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/^(?:import|export)[^;]*? from '(\.{1,2}\/[^']+)\.js';/gms)].map(
    (match) => relative(SRC, resolve(dirname(file), `${match[1] ?? ''}.ts`)),
  );
}

const graph = new Map(files(SRC).map((file) => [relative(SRC, file), importsOf(file)]));

it('http/ imports nothing of web/, and the core nothing of sandbox/ or provider/', () => {
  const wrong = [...graph].flatMap(([file, imports]) =>
    imports
      .filter(
        (target) =>
          (file.startsWith('http/') && target.startsWith('web/')) ||
          (/^(http|webhooks|queue|workers)\//.test(file) && /^(sandbox|provider)\//.test(target)),
      )
      .map((target) => `${file} → ${target}`),
  );
  expect(wrong).toEqual([]);
});

it('no import circles', () => {
  const circles: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const visit = (file: string, path: string[]) => {
    if (state.get(file) === 'done') return;
    if (state.get(file) === 'open') {
      circles.push([...path.slice(path.indexOf(file)), file].join(' → '));
      return;
    }
    state.set(file, 'open');
    for (const target of graph.get(file) ?? []) visit(target, [...path, file]);
    state.set(file, 'done');
  };
  for (const file of graph.keys()) visit(file, []);
  expect(circles).toEqual([]);
});
