/**
 * The downloads half of bench/pair.ts: the worker's code of each tree against the plain baseline
 * (undici → SHA-256 → a file, fsynced) and bare undici, alternated round by round.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import type { LocalCdn } from '../harness/local-cdn.js';
import { PARTS, type Part } from './download-parts.js';
import { forkForAnswer, medianBy } from './lib.js';
import type { Args } from './pair.js';

const MB = 1_000_000;

/** Rotations of `kinds`, one per round: each kind first once in every `kinds.length` rounds. */
export function orders<Kind>(kinds: readonly Kind[], rounds: number): Kind[][] {
  return Array.from({ length: rounds }, (_, round) =>
    kinds.map((_, i) => kinds[(i + round) % kinds.length] as Kind),
  );
}

export function summary(name: string, values: readonly number[], unit: string, extra = ''): string {
  const median = medianBy(values, (v) => v) ?? NaN;
  return `${name}: median ${round(median)} ${unit} (rounds ${values.map(round).join(', ')})${extra}`;
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}

/** One run of a tree's download probe (bench/download-probe.ts), in the mode given. */
async function probe(
  root: string,
  cdn: LocalCdn,
  urls: string[],
  env: Record<string, string> = {},
  mode: 'worker' | 'plain' = 'worker',
): Promise<{ seconds: number; cpu: number }> {
  const { answer: result, cpu } = await forkForAnswer(
    join(root, 'dist-bench', 'bench', 'download-probe.js'),
    {
      urls,
      origin: cdn.origin,
      ca: cdn.ca,
      dir: mkdtempSync(join(tmpdir(), 'aw-pair-dl-')),
      maxBytes: 1_000 * MB,
      sampleRss: false,
      mode,
    },
    { execArgv: ['--expose-gc'], env },
  );
  return { seconds: (result as { seconds: number }).seconds, cpu };
}

/** One run of the first tree's bench/download-parts.ts, up to `part`; its own CPU, not start-up. */
async function parts(root: string, cdn: LocalCdn, urls: string[], part: Part) {
  const { answer: result } = await forkForAnswer(
    join(root, 'dist-bench', 'bench', 'download-parts.js'),
    {
      urls,
      origin: cdn.origin,
      ca: cdn.ca,
      dir: mkdtempSync(join(tmpdir(), 'aw-pair-parts-')),
      part,
    },
  );
  const figures = result as { seconds: number; cpu?: number };
  return { seconds: figures.seconds, cpu: figures.cpu ?? NaN };
}

/** The bench's bare undici (bench/downloads.ts): in this process, beside the CDN. */
async function bareInProcess(
  cdn: LocalCdn,
  urls: string[],
): Promise<{ seconds: number; cpu: number }> {
  const agent = new Agent({ connect: { ca: cdn.ca } });
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  for (const url of urls) {
    const res = await request(url, { dispatcher: agent });
    for await (const _chunk of res.body) {
      // discard
    }
  }
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  await agent.close();
  return { seconds, cpu: (cpu.user + cpu.system) / 1e6 };
}

export async function pairDownloads(args: Args, cdn: LocalCdn): Promise<string[]> {
  const fileMb = 50;
  const file = randomBytes(fileMb * MB);
  const urls = Array.from(
    { length: args.files },
    (_, i) => `${cdn.origin}/dl/${fileMb}mb-${i}.mp3`,
  );
  for (const url of urls)
    cdn.route(new URL(url).pathname, (_req, res) => {
      res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': file.length }).end(file);
    });
  const first = args.trees[0]?.root ?? '';
  type Measure = () => Promise<{ seconds: number; cpu: number }>;
  const kinds: { name: string; run: Measure }[] = [
    {
      name: 'the plain baseline: undici → SHA-256 → a file, fsynced (the target baseline)',
      run: () => probe(first, cdn, urls, {}, 'plain'),
    },
    {
      name: 'bare undici, in the bench process (a ceiling)',
      run: () => bareInProcess(cdn, urls),
    },
    ...args.trees.map(({ name, root }) => ({
      name: `worker's code (${name})`,
      run: () => probe(root, cdn, urls),
    })),
    ...args.variants.map(({ name, env }) => ({
      name: `worker's code (${args.trees[0]?.name ?? ''}, ${name})`,
      run: () => probe(first, cdn, urls, env),
    })),
    ...(args.parts ? PARTS : []).map((part) => ({
      name: `part: ${part}`,
      run: () => parts(first, cdn, urls, part),
    })),
  ];
  const results = new Map<string, { seconds: number; cpu: number }[]>();
  for (const order of orders(kinds, args.rounds)) {
    for (const kind of order) {
      process.stderr.write(`pair: ${kind.name}\n`);
      const result = await kind.run();
      results.set(kind.name, [...(results.get(kind.name) ?? []), result]);
    }
  }
  const mb = args.files * fileMb;
  return kinds.map(({ name }) => {
    const runs = results.get(name) ?? [];
    return `${summary(
      name,
      runs.map((r) => mb / r.seconds),
      'MB/s',
    )}; ${summary(
      'CPU',
      runs.map((r) => (r.cpu / mb) * 1000),
      'ms per MB',
    )}`;
  });
}
