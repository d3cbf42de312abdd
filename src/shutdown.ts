import type { Logger } from 'pino';
import { DeadlineError, withDeadline } from './util/deadline.js';

export interface ShutdownStep {
  readonly name: string;
  readonly run: () => Promise<void>;
}

/**
 * Runs the shutdown steps in order (stop intake first, close Redis last) under one deadline.
 * Resolves with the exit code: 0 when every step finished in time, 1 otherwise. Jobs cut off by
 * the deadline are not lost: BullMQ sees them stalled and another worker runs them again.
 */
export async function shutdown(
  steps: readonly ShutdownStep[],
  timeoutMs: number,
  logger: Logger,
): Promise<number> {
  const run = async (): Promise<number> => {
    let code = 0;
    for (const step of steps) {
      try {
        await step.run();
        logger.info({ step: step.name }, 'shutdown step done');
      } catch (error: unknown) {
        logger.error({ err: error, step: step.name }, 'shutdown step failed');
        code = 1;
      }
    }
    return code;
  };
  return withDeadline(run(), timeoutMs, 'shutdown').catch((error: unknown) => {
    if (!(error instanceof DeadlineError)) throw error;
    logger.error({ timeoutMs }, 'shutdown deadline reached; exiting anyway');
    return 1;
  });
}
