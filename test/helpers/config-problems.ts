import { ConfigError, loadConfig } from '../../src/config/config';

/** The problems a refused start names, one a line; a start that is not refused fails the test. */
export function problems(env: Record<string, string>): readonly string[] {
  try {
    loadConfig(env);
  } catch (error: unknown) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a ConfigError');
}
