import type { ChildProcess } from 'node:child_process';

/** What the current test set up and must take down, newest first. */
const pending: (() => unknown)[] = [];

/**
 * Runs `cleanup` once the current test has finished, passed or failed, after the ones registered
 * later (a client before the server it talks to). Every cleanup runs even when one throws; the
 * first error then fails the test, so a leak is not hidden.
 */
export function afterTest(cleanup: () => unknown): void {
  pending.push(cleanup);
}

// Registered by importing this module: Jest runs a helper's top-level hooks for the test file
// that imports it.
afterEach(async () => {
  const errors: unknown[] = [];
  for (const cleanup of pending.splice(0).reverse()) {
    try {
      await cleanup();
    } catch (error: unknown) {
      errors.push(error);
    }
  }
  if (errors.length > 0) throw new AggregateError(errors, 'a cleanup after the test failed');
});

/**
 * Kills `child` with SIGKILL once the current test has finished, should it still run, and waits
 * for its exit: a test that fails while it waits on a child leaves nothing running.
 */
export function killAfterTest(child: ChildProcess): void {
  const ended = () => child.exitCode !== null || child.signalCode !== null;
  const exited = new Promise<void>((resolve) => {
    if (ended()) resolve();
    child.once('exit', () => {
      resolve();
    });
    // A child that never started emits no exit.
    child.once('error', () => {
      resolve();
    });
  });
  afterTest(async () => {
    if (child.pid !== undefined && !ended()) child.kill('SIGKILL');
    await exited;
  });
}
