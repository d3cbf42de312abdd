import type { Logger } from 'pino';

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
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<number>((resolve) => {
    timer = setTimeout(() => {
      logger.error({ timeoutMs }, 'shutdown deadline reached; exiting anyway');
      resolve(1);
    }, timeoutMs);
  });
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
  try {
    return await Promise.race([run(), deadline]);
  } finally {
    clearTimeout(timer);
  }
}
