import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/settings';
import {
  connectionsFromLimit,
  openFileLimit,
  RESERVED_FILES,
} from '../../src/util/open-file-limit';

const dir = mkdtempSync(join(tmpdir(), 'aw-limits-'));
function limitsFile(soft: string, hard: string): string {
  const path = join(dir, `${soft}-${hard}`);
  writeFileSync(
    path,
    [
      'Limit                     Soft Limit           Hard Limit           Units     ',
      'Max cpu time              unlimited            unlimited            seconds   ',
      `Max open files            ${soft.padEnd(20)} ${hard.padEnd(20)} files     `,
      'Max processes             63432                63432                processes ',
    ].join('\n'),
  );
  return path;
}

describe('MAX_CONNECTIONS follows the open-file limit', () => {
  it('reads the soft limit from a limits file', () => {
    expect(openFileLimit(limitsFile('20000', '1048576'))).toBe(20_000);
    expect(openFileLimit(limitsFile('unlimited', 'unlimited'))).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('without the file, a shell says what this process inherited', () => {
    expect(openFileLimit(join(dir, 'absent'))).toBe(openFileLimit());
    expect(openFileLimit()).toBeGreaterThan(0);
  });

  it('the limit less 512, never under 512, at most the bound', () => {
    expect(connectionsFromLimit(20_000, 1_000_000)).toBe(20_000 - RESERVED_FILES);
    expect(connectionsFromLimit(1024, 1_000_000)).toBe(512);
    expect(connectionsFromLimit(256, 1_000_000)).toBe(512);
    expect(connectionsFromLimit(undefined, 1_000_000)).toBe(512);
    expect(connectionsFromLimit(Number.MAX_SAFE_INTEGER, 1_000_000)).toBe(1_000_000);
  });

  it('is the default; a number set is taken as is', () => {
    const limit = openFileLimit();
    expect(loadConfig({ WEBHOOK_SECRETS: 's' }).maxConnections).toBe(
      connectionsFromLimit(limit, 1_000_000),
    );
    expect(loadConfig({ WEBHOOK_SECRETS: 's', MAX_CONNECTIONS: 'auto' }).maxConnections).toBe(
      connectionsFromLimit(limit, 1_000_000),
    );
    expect(loadConfig({ WEBHOOK_SECRETS: 's', MAX_CONNECTIONS: '100' }).maxConnections).toBe(100);
  });
});
