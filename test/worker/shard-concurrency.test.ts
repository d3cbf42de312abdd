import { shardConcurrency } from '../../src/worker/start-workers';

const split = (total: number, shards: number) =>
  Array.from({ length: shards }, (_, index) => shardConcurrency(total, shards, index));

it('WORKER_CONCURRENCY is split among the shards, never exceeded while there are fewer shards', () => {
  expect(split(8, 1)).toEqual([8]);
  expect(split(8, 6)).toEqual([2, 2, 1, 1, 1, 1]);
  expect(split(8, 3)).toEqual([3, 3, 2]);
  for (let total = 1; total <= 64; total++) {
    for (let shards = 1; shards <= total; shards++) {
      expect(split(total, shards).reduce((sum, each) => sum + each, 0)).toBe(total);
    }
  }
});

it('every shard is served: one job at once each when the shards outnumber WORKER_CONCURRENCY', () => {
  expect(split(2, 6)).toEqual([1, 1, 1, 1, 1, 1]);
});
