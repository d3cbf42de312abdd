import { Writable } from 'node:stream';
import { createLogger } from '../../src/telemetry/logger';
import { shutdown } from '../../src/shutdown';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { lines, logger: createLogger('info', sink) };
}

describe('shutdown', () => {
  it('runs the steps in order and resolves 0', async () => {
    const { logger } = capture();
    const order: string[] = [];
    const step = (name: string) => ({
      name,
      run: async () => {
        await Promise.resolve();
        order.push(name);
      },
    });
    expect(await shutdown([step('http'), step('workers'), step('redis')], 1000, logger)).toBe(0);
    expect(order).toEqual(['http', 'workers', 'redis']);
  });

  it('a failing step is logged, the later steps still run, and it resolves 1', async () => {
    const { lines, logger } = capture();
    const ran: string[] = [];
    const code = await shutdown(
      [
        { name: 'http', run: () => Promise.reject(new Error('stuck')) },
        { name: 'redis', run: () => Promise.resolve(void ran.push('redis')) },
      ],
      1000,
      logger,
    );
    expect(code).toBe(1);
    expect(ran).toEqual(['redis']);
    expect(lines).toContainEqual(
      expect.objectContaining({ step: 'http', msg: 'shutdown step failed' }),
    );
  });

  it('gives up at the deadline and resolves 1', async () => {
    const { lines, logger } = capture();
    const never = new Promise<void>(() => undefined);
    const code = await shutdown([{ name: 'workers', run: () => never }], 50, logger);
    expect(code).toBe(1);
    expect(lines).toContainEqual(expect.objectContaining({ timeoutMs: 50 }));
  });
});
