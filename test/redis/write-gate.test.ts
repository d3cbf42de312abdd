import { refusalOf } from '../../src/redis/redis-memory';

describe('refusalOf', () => {
  it.each([
    ["OOM command not allowed when used memory > 'maxmemory'.", 'oom'],
    ["READONLY You can't write against a read only replica.", 'readonly'],
    ['LOADING Redis is loading the dataset in memory', 'loading'],
    [
      'MISCONF Redis is configured to save RDB snapshots, but it is currently not able to persist on disk.',
      'misconf',
    ],
    ['EXECABORT Transaction discarded because of: OOM command not allowed', 'oom'],
    ['Command timed out', undefined],
    ['ERR unknown command', undefined],
  ])('%s → %s', (message, reason) => {
    expect(refusalOf(new Error(message))).toBe(reason);
  });

  it('a MULTI refused at queue time: the refusal among its previous errors, read one level deep', () => {
    const abort = Object.assign(
      new Error('EXECABORT Transaction discarded because of previous errors.'),
      {
        previousErrors: [new Error('OOM command not allowed')],
      },
    );
    expect(refusalOf(abort)).toBe('oom');
    // A list that holds the error itself (as a failover's aborted transaction reported) ends.
    const loop = Object.assign(new Error('Connection is closed.'), {
      previousErrors: [] as Error[],
    });
    loop.previousErrors.push(loop);
    expect(refusalOf(loop)).toBeUndefined();
    expect(refusalOf('OOM')).toBeUndefined();
  });
});
