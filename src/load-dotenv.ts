import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

/**
 * Loads `.env` from the working directory when there is one (Node's own parser, 20.12+). The real
 * environment wins: a variable already set, even to "", is not replaced. Returns the file read.
 */
export function loadDotEnv(dir = process.cwd()): string | undefined {
  const path = resolve(dir, '.env');
  if (!existsSync(path)) return undefined;
  process.loadEnvFile(path);
  return path;
}
