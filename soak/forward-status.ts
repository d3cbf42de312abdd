import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { repositoryRoot } from './service-copy.js';

const run = promisify(execFile);

/**
 * The operator CLI (`audio-webhooks <args>`, the package's bin, as an operator runs it) with
 * the service's environment; resolves with its standard output, rejects with its first line of
 * complaint. Bounded: a CLI that waits on a Redis that does not answer is cut after 20 s.
 */
export async function cli(env: Readonly<Record<string, string>>, args: readonly string[]) {
  const bin = join(repositoryRoot(), 'bin', 'audio-webhooks.js');
  try {
    const { stdout } = await run(process.execPath, [bin, ...args], {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        ...env,
        LOG_LEVEL: 'warn',
      },
      timeout: 20_000,
      maxBuffer: 256 * 1024 * 1024,
    });
    return stdout;
  } catch (error: unknown) {
    const said = (error as { stderr?: unknown }).stderr;
    const stderr = typeof said === 'string' ? said.trim() : '';
    throw new Error(stderr.split('\n')[0] || String(error), { cause: error });
  }
}

/** `forward status --json`'s state of one destination, or why it could not be read. */
export async function forwardStatus(
  env: Readonly<Record<string, string>>,
  name: string,
): Promise<string> {
  try {
    const rows = JSON.parse(await cli(env, ['forward', 'status', '--json'])) as {
      name?: unknown;
      state?: unknown;
    }[];
    const row = rows.find((r) => r.name === name);
    return row === undefined ? `not listed by forward status` : String(row.state);
  } catch (error: unknown) {
    return `unknown (forward status: ${error instanceof Error ? error.message : String(error)})`;
  }
}
