import { pairedRatio } from '../../bench/section';

describe("the bench's paired ratios", () => {
  it("is the median of the rounds' own ratios, not a ratio of two medians from different rounds", () => {
    // The machine moves from round to round; within each, the service's run is next to the
    // naive worker's. The medians (150 and 200 items/s) come from different rounds: 0.75.
    const naive = [{ perSecond: 100 }, { perSecond: 300 }, { perSecond: 200 }];
    const service = [{ perSecond: 90 }, { perSecond: 150 }, { perSecond: 190 }];
    const paired = pairedRatio(service, naive, (run) => run.perSecond);
    expect(paired.rounds).toEqual([0.9, 0.5, 0.95]);
    expect(paired.median).toBeCloseTo(0.9, 10);
  });

  it('takes the median of the rounds, unrounded, and keeps each round in the order run', () => {
    const base = [{ v: 3 }, { v: 3 }, { v: 3 }];
    const paired = pairedRatio([{ v: 2 }, { v: 1 }, { v: 2.9 }], base, (run) => run.v);
    expect(paired.rounds).toEqual([0.667, 0.333, 0.967]);
    expect(paired.median).toBe(2 / 3);
  });

  it('refuses rounds that do not pair up, and reads no median when a round has no figure', () => {
    expect(() => pairedRatio([{ v: 1 }, { v: 1 }], [{ v: 1 }], (run) => run.v)).toThrow(
      '2 rounds against 1 of the baseline',
    );
    const paired = pairedRatio(
      [{ v: 1 }, { v: 0 }, { v: 3 }],
      [{ v: 1 }, { v: 0 }, { v: 1 }],
      (run) => run.v,
    );
    expect(paired.rounds).toEqual([1, NaN, 3]);
    expect(paired.median).toBeNaN();
  });
});
