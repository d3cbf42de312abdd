import { drainInReserve } from '../../src/worker/reserve-drain';
import type { HoldReason } from '../../src/redis/redis-memory';

/** A gate whose state the test sets, and a worker that records what it was told. */
function setup(forwards: () => Promise<number>) {
  const listeners = new Set<(reason: HoldReason | undefined) => void>();
  const gate = {
    holding: undefined as HoldReason | undefined,
    onChange(listener: (reason: HoldReason | undefined) => void) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
  const worker = {
    concurrency: 8,
    paused: false,
    pause() {
      this.paused = true;
      return Promise.resolve();
    },
    resume() {
      this.paused = false;
      return Promise.resolve();
    },
    isPaused() {
      return this.paused;
    },
  };
  let asked = 0;
  const checked: (() => void)[] = [];
  const forwardsWaiting = async () => {
    asked += 1;
    try {
      return await forwards();
    } finally {
      // Let the caller's continuation run before the test looks.
      setImmediate(() => checked.shift()?.());
    }
  };
  const nextCheck = () => new Promise<void>((resolve) => checked.push(resolve));
  const stop = drainInReserve(worker, gate, forwardsWaiting);
  const set = (reason: HoldReason | undefined) => {
    gate.holding = reason;
    for (const listener of listeners) listener(reason);
  };
  return { worker, set, stop, nextCheck, asked: () => asked };
}

describe('the delivery workers in the reserve', () => {
  it('with no forward waiting, take jobs one at a time, and their own number again after', async () => {
    const { worker, set, stop, nextCheck } = setup(() => Promise.resolve(0));
    const checked = nextCheck();
    set('memory_reserve');
    await checked;
    expect(worker).toMatchObject({ concurrency: 1, paused: false });
    set(undefined);
    expect(worker.concurrency).toBe(8);
    stop();
  });

  it('while forwards wait, take no new job', async () => {
    const { worker, set, stop, nextCheck } = setup(() => Promise.resolve(3));
    const checked = nextCheck();
    set('memory_reserve');
    await checked;
    expect(worker.paused).toBe(true);
    stop();
  });

  it('when the backlog cannot be read, hold as for waiting forwards', async () => {
    const { worker, set, stop, nextCheck } = setup(() => Promise.reject(new Error('timeout')));
    const checked = nextCheck();
    set('memory_reserve');
    await checked;
    expect(worker.paused).toBe(true);
    stop();
  });

  it('leave the worker alone for every other reason', () => {
    const { worker, set, stop, asked } = setup(() => Promise.resolve(0));
    set('oom');
    set('eviction_policy');
    expect(asked()).toBe(0);
    expect(worker).toMatchObject({ concurrency: 8, paused: false });
    stop();
  });
});
