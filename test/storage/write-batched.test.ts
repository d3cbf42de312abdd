import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { unwritten } from '../../src/storage/local/local-audio-store';

it('unwritten() drops whole buffers, then cuts into the first one not written in full', () => {
  const parts = [Buffer.from('abc'), Buffer.from('de'), Buffer.from('fghi')];
  const text = (buffers: Uint8Array[]) => Buffer.concat(buffers).toString();
  expect(text(unwritten(parts, 0))).toBe('abcdefghi');
  expect(text(unwritten(parts, 2))).toBe('cdefghi');
  expect(text(unwritten(parts, 3))).toBe('defghi');
  expect(unwritten(parts, 3)).toHaveLength(2);
  expect(text(unwritten(parts, 6))).toBe('ghi');
  expect(unwritten(parts, 9)).toEqual([]);
});

/**
 * Run in a plain Node process (built dist/, as global setup leaves it) with no listener: Node's
 * default turns an unhandled rejection into a crash. Jest's own process events would hide it.
 */
const SCENARIO = `
const { writeBatched } = require(${JSON.stringify(join(__dirname, '..', '..', 'dist', 'storage', 'local', 'local-audio-store.js'))});
const { open } = require('node:fs/promises');
const { setImmediate: nextTurn } = require('node:timers/promises');
(async () => {
  // Opened for reading: every write to it fails with EBADF.
  const handle = await open(process.argv[1], 'r');
  let attempted;
  const spied = new Proxy(handle, {
    get: (target, key) =>
      key === 'writev' ? (buffers) => (attempted = target.writev(buffers)) : Reflect.get(target, key, target),
  });
  async function* source() {
    // A full batch, so that it is written while the next chunk is awaited...
    yield Buffer.alloc(1 << 20);
    // ...which comes only after that write failed and Node looked for unhandled rejections.
    await attempted.catch(() => undefined);
    await nextTurn();
    await nextTurn();
    yield Buffer.alloc(10);
  }
  await writeBatched(spied, source(), (error) => new Error('disk: ' + error.code)).then(
    () => console.log('written'),
    (error) => console.log('rejected ' + error.message),
  );
})();
`;

it('a write failing while the next chunk is awaited fails the write and does not crash the process', () => {
  const dir = mkdtempSync(join(tmpdir(), 'aw-batched-'));
  writeFileSync(join(dir, 'read-only'), '');
  const run = spawnSync(process.execPath, ['-e', SCENARIO, join(dir, 'read-only')], {
    encoding: 'utf8',
  });
  expect({ status: run.status, stdout: run.stdout, stderr: run.stderr }).toEqual({
    status: 0,
    stdout: 'rejected disk: EBADF\n',
    stderr: '',
  });
});
