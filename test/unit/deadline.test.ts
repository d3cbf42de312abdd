import { once } from 'node:events';
import { timeoutSignal } from '../../src/util/deadline.js';

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
