import { ConfigError, loadConfig } from '../../src/settings';

/** The error a refused start throws; a start that is not refused fails the test. */
export function refusal(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (error: unknown) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

/** The problems a refused start names, one a line. */
export const problems = (env: Record<string, string>): readonly string[] => refusal(env).problems;
