import { createLiveness, type LivenessOptions } from '../../src/worker/liveness';

/** A liveness on a clock the test moves, with `ready` jobs waiting in Redis. */
function setup(overrides: Partial<LivenessOptions> = {}) {
  let time = 1_000_000;
  let ready = 0;
  let paused = false;
  const liveness = createLiveness({
    stallMs: 60_000,
    concurrency: 2,
    readyJobs: () => Promise.resolve(ready),
    isPaused: () => paused,
    now: () => time,
    ...overrides,
  });
  return {
    liveness,
    advance: (ms: number) => (time += ms),
    setReady: (n: number) => (ready = n),
    pause: () => (paused = true),
  };
}

/** Starts a job whose processor settles only when the returned function is called. */
function hold(liveness: ReturnType<typeof setup>['liveness']) {
  let release = () => {};
  const done = liveness.track(() => new Promise<void>((resolve) => (release = resolve)));
  return async () => {
    release();
    await done;
  };
}

it('a worker that holds a job past WORKER_STALL_MS is wedged, and well again once it settles', async () => {
  const { liveness, advance } = setup();
  const release = hold(liveness);
  advance(60_000);
  expect(await liveness.check()).toEqual({ ok: true });
  advance(1);
  expect(await liveness.check()).toEqual({
    ok: false,
    reason: 'holds 1 job; the oldest has run 60001 ms (WORKER_STALL_MS 60000)',
  });
  await release();
  expect(await liveness.check()).toEqual({ ok: true });
});

it('the oldest held job decides, not the newest', async () => {
  const { liveness, advance } = setup({ concurrency: 5 });
  hold(liveness);
  advance(50_000);
  hold(liveness);
  advance(10_001);
  expect(await liveness.check()).toMatchObject({ ok: false, reason: /holds 2 job/ });
});

it('a processor that throws is settled too', async () => {
  const { liveness, advance } = setup();
  await expect(liveness.track(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
  advance(120_000);
  expect(await liveness.check()).toEqual({ ok: true });
});

it('idle with free slots while jobs wait, for longer than WORKER_STALL_MS: wedged', async () => {
  const { liveness, advance, setReady } = setup();
  setReady(3);
  advance(60_000);
  expect(await liveness.check()).toEqual({ ok: true });
  advance(1);
  expect(await liveness.check()).toEqual({
    ok: false,
    reason: '3 jobs wait, yet no job was taken for 60001 ms with 2 free slots',
  });
  // Taking a job is progress.
  await liveness.track(() => Promise.resolve());
  expect(await liveness.check()).toEqual({ ok: true });
});

it('idle with nothing to take, paused, at full concurrency, or Redis unable to say: alive', async () => {
  const quiet = setup();
  quiet.advance(600_000);
  expect(await quiet.liveness.check()).toEqual({ ok: true });

  const paused = setup();
  paused.setReady(5);
  paused.pause();
  paused.advance(600_000);
  expect(await paused.liveness.check()).toEqual({ ok: true });

  const redisDown = setup({ readyJobs: () => Promise.reject(new Error('ECONNREFUSED')) });
  redisDown.advance(600_000);
  expect(await redisDown.liveness.check()).toEqual({ ok: true });

  const busy = setup({ concurrency: 1 });
  busy.setReady(5);
  hold(busy.liveness);
  busy.advance(30_000);
  expect(await busy.liveness.check()).toEqual({ ok: true });
});
