import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

// The arrows run one way, from the features down to what they stand on. A file imports from its
// own folder and from the folders on rungs before it in LAYERS, never from one after it; no two
// folders import each other through any path; no module imports itself through a circle. A
// subfolder (storage/s3/, forwarding/senders/, worker/handlers/, sandbox/api/…) counts as part
// of its top folder: the rungs are features and what they share, not files.
const SRC = join(__dirname, '..', '..', 'src');

/**
 * src/'s top folders in rungs, lowest first (the README's "Development" has a line on each): the
 * provider's published format and small helpers; the settings; Redis, telemetry, BullMQ and the
 * HTTP server; the shared stores, the delivery queue and the download; the features (receiver,
 * worker, forwarding, archive, inspector); the provider client, sandbox and dev tools; the composition root
 * (`.`: main.ts, index.ts, settings.ts, which puts config/'s settings and a feature's own, such as
 * forwarding/settings/, into one table); the CLI and a fork's code. Folders on one rung are peers: each may
 * import the other, but not in a loop. Only the CLI and the examples import the root.
 */
const LAYERS: readonly (readonly string[])[] = [
  ['util', 'provider-spec'],
  ['config'],
  ['redis', 'telemetry', 'jobs', 'http-server'],
  ['storage', 'history', 'queue', 'download', 'hooks'],
  ['receiver', 'worker', 'forwarding', 'archive', 'inspector'],
  ['provider', 'sandbox', 'dev'],
  ['.'],
  ['cli', 'examples', 'custom'],
];

type Graph = ReadonlyMap<string, readonly string[]>;

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

const folderOf = (file: string) => (file.includes('/') ? (file.split('/')[0] ?? '') : '.');
const rank = (folder: string) => LAYERS.findIndex((layer) => layer.includes(folder));

/** Imports into a later layer, and files in a folder LAYERS does not name. */
function importsUp(graph: Graph): string[] {
  return [...graph].flatMap(([file, imports]) => {
    if (rank(folderOf(file)) === -1) return [`${file}: its folder is not in LAYERS`];
    return imports
      .filter((target) => rank(folderOf(target)) > rank(folderOf(file)))
      .map((target) => `${file} → ${target}`);
  });
}

/** Circles in a graph of names, each as `a → b → a`. */
function circles(edges: ReadonlyMap<string, readonly string[]>): string[] {
  const found: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const visit = (node: string, path: string[]) => {
    if (state.get(node) === 'done') return;
    if (state.get(node) === 'open') {
      found.push([...path.slice(path.indexOf(node)), node].join(' → '));
      return;
    }
    state.set(node, 'open');
    for (const next of edges.get(node) ?? []) visit(next, [...path, node]);
    state.set(node, 'done');
  };
  for (const node of edges.keys()) visit(node, []);
  return found;
}

/** The folders each folder imports from (its own left out). */
function folderGraph(graph: Graph): Map<string, string[]> {
  const folders = new Map<string, Set<string>>();
  for (const [file, imports] of graph) {
    const from = folderOf(file);
    const targets = folders.get(from) ?? new Set<string>();
    for (const target of imports) if (folderOf(target) !== from) targets.add(folderOf(target));
    folders.set(from, targets);
  }
  return new Map([...folders].map(([folder, targets]) => [folder, [...targets]]));
}

const graph: Graph = new Map(files(SRC).map((file) => [relative(SRC, file), importsOf(file)]));

it('no import runs back up the rungs', () => {
  expect(importsUp(graph)).toEqual([]);
});

it('no folder-level loop', () => {
  expect(circles(folderGraph(graph))).toEqual([]);
});

it('no import circles between files', () => {
  expect(circles(graph)).toEqual([]);
});

it('the checks catch what they are for (a deliberate violation of each)', () => {
  const bent: Graph = new Map([
    ['config/parsers.ts', ['forwarding/destination-board.ts']],
    ['forwarding/destination-board.ts', []],
    ['receiver/a.ts', ['worker/b.ts']],
    ['worker/b.ts', ['receiver/c.ts']],
    ['receiver/c.ts', ['receiver/a.ts']],
    ['storage/s3/d.ts', ['receiver/a.ts']],
    ['nowhere/x.ts', []],
  ]);
  expect(importsUp(bent)).toEqual([
    'config/parsers.ts → forwarding/destination-board.ts',
    'storage/s3/d.ts → receiver/a.ts',
    'nowhere/x.ts: its folder is not in LAYERS',
  ]);
  expect(circles(folderGraph(bent))).toEqual(['receiver → worker → receiver']);
  expect(circles(bent)).toEqual(['receiver/a.ts → worker/b.ts → receiver/c.ts → receiver/a.ts']);
});

it('the order is short enough to say in one sentence', () => {
  expect(LAYERS.length).toBeLessThanOrEqual(8);
});

it('a folder holds at most 16 files of its own, a file at most 300 lines', () => {
  const perFolder = new Map<string, number>();
  for (const file of graph.keys()) {
    const folder = dirname(file);
    perFolder.set(folder, (perFolder.get(folder) ?? 0) + 1);
  }
  expect([...perFolder].filter(([, count]) => count > 16)).toEqual([]);
  const long = [...graph.keys()].filter(
    (file) => readFileSync(join(SRC, file), 'utf8').split('\n').length > 301,
  );
  expect(long).toEqual([]);
});

// queue/delivery-keys.ts owns the deliveries' key layout: BullMQ's keys under the queue's
// prefix, the dedupe mark, the handled job's hash. A file elsewhere that spells one of them
// breaks when that layout changes (sharding, a BullMQ upgrade) and reads the wrong key silently.
it("no file outside queue/ builds or reads the deliveries queue's keys or the dedupe mark", () => {
  const spellings = [
    /:de:/,
    /:seen:/,
    /'deid'/,
    /qualifiedName/i,
    /(?<!:inspect):(wait|completed|failed|active|delayed|prioritized)['`]/,
  ];
  const leaks = [...graph.keys()]
    .filter((file) => folderOf(file) !== 'queue')
    .flatMap((file) => {
      const text = readFileSync(join(SRC, file), 'utf8');
      return spellings
        .filter((spelling) => spelling.test(text))
        .map((s) => `${file}: ${String(s)}`);
    });
  expect(leaks).toEqual([]);
});

it('the core never reaches the provider client or the sandbox', () => {
  const core = ['http-server', 'provider-spec', 'queue', 'receiver', 'worker', 'forwarding'];
  for (const folder of core) expect(rank(folder)).toBeLessThan(rank('provider'));
  expect(rank('provider')).toBe(rank('sandbox'));
});

// test/ is grouped as src/ is: a folder per feature of src/ (test/forwarding/ tests
// src/forwarding/, its pure and its integration tests side by side), and a few for what src/
// does not hold.
const TEST = join(__dirname, '..');
const TEST_ONLY = ['helpers', 'deploy', 'docs', 'repository', 'service', 'soak'];

/** Each folder under `dir` (itself included), relative to `dir`, with its own files' count. */
function ownFiles(dir: string, under = ''): [string, number][] {
  const entries = readdirSync(join(dir, under), { withFileTypes: true });
  return [
    [under, entries.filter((entry) => entry.isFile()).length],
    ...entries
      .filter((entry) => entry.isDirectory())
      .flatMap((entry) => ownFiles(dir, join(under, entry.name))),
  ];
}

it("test/'s folders are src/'s features and TEST_ONLY's, each at most 16 files of its own", () => {
  const folders = ownFiles(TEST);
  const top = new Set(folders.map(([folder]) => folder.split('/')[0] ?? ''));
  top.delete('');
  const features = LAYERS.flat().filter((folder) => folder !== '.');
  expect([...top].filter((folder) => ![...features, ...TEST_ONLY].includes(folder))).toEqual([]);
  expect(folders.filter(([folder, count]) => folder === '' && count > 0)).toEqual([]);
  expect(folders.filter(([, count]) => count > 16)).toEqual([]);
});
