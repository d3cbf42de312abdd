import { groupCommit } from '../../src/util/group-commit';

/** An fsync stand-in that records when each run starts and finishes only when told to. */
function controlledSync() {
  const runs: { finish: (error?: Error) => void; startedAfter: number }[] = [];
  let asked = 0;
  const sync = () =>
    new Promise<void>((resolve, reject) => {
      const finish = (error?: Error) => {
        if (error) reject(error);
        else resolve();
      };
      runs.push({ finish, startedAfter: asked });
    });
  return { runs, sync, ask: () => ++asked };
}

it('callers arriving while a sync runs share the next one, which starts after they asked', async () => {
  const { runs, sync, ask } = controlledSync();
  const commit = groupCommit(sync);
  const settled: number[] = [];
  const call = () => {
    const n = ask();
    void commit().then(() => settled.push(n));
  };
  call(); // starts run 0 at once
  expect(runs).toHaveLength(1);
  call();
  call();
  call(); // three callers wait for one more run
  expect(runs).toHaveLength(1);
  runs[0]?.finish();
  await new Promise(setImmediate);
  expect(settled).toEqual([1]);
  // Run 1 started only after callers 2–4 asked.
  expect(runs).toHaveLength(2);
  expect(runs[1]?.startedAfter).toBe(4);
  call(); // asks while run 1 runs: covered by run 2, not by run 1
  runs[1]?.finish();
  await new Promise(setImmediate);
  expect(settled).toEqual([1, 2, 3, 4]);
  expect(runs).toHaveLength(3);
  runs[2]?.finish();
  await new Promise(setImmediate);
  expect(settled).toEqual([1, 2, 3, 4, 5]);
  expect(runs).toHaveLength(3);
});

it('a failed sync fails its callers; the next caller gets a fresh one', async () => {
  const { runs, sync } = controlledSync();
  const commit = groupCommit(sync);
  const first = commit();
  const waiting = commit();
  runs[0]?.finish(new Error('EIO'));
  await expect(first).rejects.toThrow('EIO');
  // The waiting caller asked after run 0 started: run 0's failure is not its answer.
  await new Promise(setImmediate);
  expect(runs).toHaveLength(2);
  runs[1]?.finish();
  await expect(waiting).resolves.toBeUndefined();
  const later = commit();
  expect(runs).toHaveLength(3);
  runs[2]?.finish();
  await expect(later).resolves.toBeUndefined();
});
