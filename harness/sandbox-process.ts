import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { request } from 'undici';
import { freePort } from './private-redis';

/** The repository's root, from harness/ or from the benchmark's dist-bench/harness. */
function repoRoot(from = __dirname): string {
  let dir = from;
  while (!existsSync(join(dir, 'package.json'))) dir = dirname(dir);
  return dir;
}

const BIN = join(repoRoot(), 'bin', 'audio-webhooks.js');

export interface SandboxInfo {
  readonly api: string;
  readonly cdn: string;
  readonly ca: string;
  readonly key: { readonly id: string; readonly token: string };
}

export interface SandboxProcess {
  readonly child: ChildProcess;
  readonly info: SandboxInfo;
  readonly dir: string;
  readonly prefix: string;
  /** SIGTERM, then waits for the exit code. */
  stop(): Promise<number | null>;
  /** GET or POST a JSON path of the sandbox's API; resolves with status, headers and body. */
  call(
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
    token?: string,
  ): Promise<{ status: number; headers: Record<string, unknown>; body: unknown }>;
}

export interface SandboxOptions {
  readonly flags?: Readonly<Record<string, string>>;
  readonly env?: Readonly<Record<string, string>>;
  /** Reuse the state of an earlier run (a restart). */
  readonly dir?: string;
  readonly prefix?: string;
}

/**
 * The settings of a whole service (ROLE=all) listening on loopback `port`, where `sbx` delivers
 * (its --webhook-url), and downloading from the sandbox's CDN with the sandbox's own CA.
 */
export function deliveredBy(sbx: SandboxProcess, port: number): Record<string, string> {
  return {
    PORT: String(port),
    HOST: '127.0.0.1',
    ROLE: 'all',
    CDN_URL: sbx.info.cdn,
    DOWNLOAD_CA_FILE: sbx.info.ca,
    DOWNLOAD_ALLOW_PRIVATE_IPS: 'true',
  };
}

/** Runs `audio-webhooks sandbox` as a user would, on free loopback ports, and reads its JSON line. */
export async function startSandboxProcess(options: SandboxOptions = {}): Promise<SandboxProcess> {
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'aw-sandbox-'));
  const prefix = options.prefix ?? `sandbox-test-${Math.random().toString(16).slice(2)}`;
  const flags = {
    port: String(await freePort()),
    'cdn-port': String(await freePort()),
    dir,
    ...options.flags,
  };
  const child = spawn(
    process.execPath,
    [BIN, 'sandbox', ...Object.entries(flags).flatMap(([name, value]) => [`--${name}`, value])],
    {
      env: {
        PATH: process.env.PATH ?? '',
        REDIS_URL: process.env.REDIS_URL ?? '',
        SANDBOX_PREFIX: prefix,
        LOG_LEVEL: 'warn',
        ...options.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const lines = createInterface({ input: child.stdout });
  const exited = once(child, 'exit');
  const first = await Promise.race([
    once(lines, 'line').then(([line]) => line as string),
    exited.then(([code]) => {
      throw new Error(`sandbox exited (${String(code)}): ${stderr}`);
    }),
  ]);
  const info = JSON.parse(first) as SandboxInfo;
  return {
    child,
    info,
    dir,
    prefix,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      const [code] = (await exited) as [number | null];
      return code;
    },
    async call(method, path, body, token) {
      const res = await request(`${info.api}${path}`, {
        method,
        headers: {
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const type = String(res.headers['content-type'] ?? '');
      const parsed: unknown = type.includes('json')
        ? await res.body.json()
        : Buffer.from(await res.body.arrayBuffer());
      return { status: res.statusCode, headers: res.headers, body: parsed };
    },
  };
}

/**
 * src/util/eventually.ts's, the one poll for what another process does (the sandbox's records
 * are what a test can see of it); passed on only for the tests that import it from here.
 */
export { eventually } from '../src/util/eventually';
