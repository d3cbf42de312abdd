import { once } from 'node:events';
import { DeadlineError, timeoutSignal, withDeadline } from '../../src/util/deadline.js';

/** Resolves once `ms` have passed, by a timer of the test's own (the event it waits for). */
const passed = (ms: number) => once(AbortSignal.timeout(ms), 'abort');

it('aborts once its time has passed, with the TimeoutError that AbortSignal.timeout gives', async () => {
  const { signal } = timeoutSignal(5);
  await once(signal, 'abort');
  expect(signal.reason).toBeInstanceOf(DOMException);
  expect((signal.reason as DOMException).name).toBe('TimeoutError');
});

it('never aborts once cleared', async () => {
  const { signal, clear } = timeoutSignal(5);
  clear();
  await passed(40);
  expect(signal.aborted).toBe(false);
});

describe('withDeadline', () => {
  const never = new Promise<never>(() => undefined);

  it('passes on what the work settles with, before its time', async () => {
    await expect(withDeadline(Promise.resolve(7), 1_000, 'Redis')).resolves.toBe(7);
    await expect(
      withDeadline(Promise.reject(new Error('refused')), 1_000, 'Redis'),
    ).rejects.toThrow('refused');
  });

  it('rejects with a DeadlineError naming what did not answer, once its time has passed', async () => {
    const late = withDeadline(never, 5, 'Redis');
    await expect(late).rejects.toBeInstanceOf(DeadlineError);
    await expect(late).rejects.toThrow('Redis did not answer within 5 ms');
  });

  it('with a signal: rejects when it aborts, and at once when it already has', async () => {
    const controller = new AbortController();
    const bounded = withDeadline(never, controller.signal, 'the CDN');
    controller.abort();
    await expect(bounded).rejects.toThrow('the CDN: no answer in time');
    await expect(withDeadline(never, controller.signal, 'the CDN')).rejects.toBeInstanceOf(
      DeadlineError,
    );
  });

  it('a work that settles after its time is ignored, not left unhandled', async () => {
    let fail: (error: Error) => void = () => undefined;
    const work = new Promise<never>((_resolve, reject) => (fail = reject));
    await expect(withDeadline(work, 5, 'Redis')).rejects.toBeInstanceOf(DeadlineError);
    fail(new Error('too late'));
    await passed(10);
  });
});
