import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';

/** Debian's Chromium (`.ci/run` installs it); playwright-core brings no browser of its own. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Where tests leave what a person may want to look at (screenshots): under the system's temp
 * folder, never in the checkout (the suite's teardown fails on files a test left there).
 */
export const TEST_OUTPUT = join(tmpdir(), 'audio-webhooks-test-results');
mkdirSync(TEST_OUTPUT, { recursive: true });

/**
 * Headless Chromium with nothing of its own on the network: this machine's network is closed,
 * and Chromium's background fetches (updates, sync, QUIC probes) would only fail, many at a time.
 */
export function launchChromium(extraArgs: readonly string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      ...extraArgs,
    ],
  });
}
