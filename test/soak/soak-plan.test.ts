import { compileFilter } from '../../src/forwarding/settings/message-filter';
import { parseSoakArgs, seedOf } from '../../soak/args';
import { AMQP_FILTER, wantsOf } from '../../soak/destinations-config';
import { countByKind, FAULT_KINDS, planFaults, type FaultKind } from '../../soak/fault-plan';
import { createIdSource } from '../../soak/ids';
import { percentile, splitLatency } from '../../soak/latency';
import { padToBytes } from '../../soak/padding';
import { mulberry32 } from '../../soak/prng';
import { planTraffic } from '../../soak/traffic-plan';

// The soak's plans are drawn from the seed alone: same seed, same schedule and traffic.

const LONG = {
  startMs: 20_000,
  endMs: 1_798_000,
  meanGapMs: 12_000,
  durationScale: 1,
  minPausedMs: 45_000,
};

it('the same seed plans the same faults and traffic; another seed, others', () => {
  const plan = (seed: number) => {
    const random = mulberry32(seed);
    return {
      traffic: planTraffic(random.fork(), {
        durationMs: 120_000,
        rate: 3,
        overLimitUntilMs: 60_000,
      }),
      faults: planFaults(random.fork(), LONG),
    };
  };
  expect(plan(39)).toEqual(plan(39));
  expect(plan(39)).not.toEqual(plan(40));
});

it('a 30-minute plan deals every fault kind at least five times, none past its end, one target at a time per kind', () => {
  for (const seed of [1, 2, 3, 3901, 3902]) {
    const faults = planFaults(mulberry32(seed), LONG);
    for (const count of Object.values(countByKind(faults))) expect(count).toBeGreaterThanOrEqual(5);
    for (const fault of faults)
      expect(fault.atMs + fault.durationMs).toBeLessThanOrEqual(LONG.endMs);
    expect(
      faults.filter((f) => f.kind === 'destination_paused').every((f) => f.durationMs >= 45_000),
    ).toBe(true);
  }
});

it('--without leaves those kinds out of the plan', () => {
  const options = parseSoakArgs(
    ['--minutes', '1.5', '--seed', '39', '--without', 'store_full,kill_redis'],
    () => 0,
  );
  const faults = planFaults(mulberry32(39), { ...options.faults, endMs: 88_000 });
  expect(faults.some((f) => f.kind === 'store_full' || f.kind === 'kill_redis')).toBe(false);
  expect(options.faults.kinds).toHaveLength(FAULT_KINDS.length - 2);
  expect(() => parseSoakArgs(['--without', 'meteor'], () => 0)).toThrow(/unknown fault meteor/);
});

it('ids are new, well-formed, at most 256 UTF-16 units, and of every kind', () => {
  const next = createIdSource(mulberry32(7));
  const ids = Array.from({ length: 2_000 }, () => next());
  expect(new Set(ids).size).toBe(ids.length);
  for (const id of ids) {
    expect(id.length).toBeGreaterThan(0);
    expect(id.length).toBeLessThanOrEqual(256);
    // No lone surrogate: with the u flag, \p{Cs} matches only an unpaired one.
    expect(/\p{Cs}/u.test(id)).toBe(false);
  }
  expect(ids.some((id) => /[^\x20-\x7e]/.test(id))).toBe(true);
  expect(ids.some((id) => id.length === 256)).toBe(true);
  expect(ids.some((id) => id.includes('/'))).toBe(true);
});

it('a padded body is exactly the bytes asked for, as the sandbox serialises it', () => {
  const data = { id: 'ü-1', kind: 'tts', audio_url: 'https://127.0.0.1:1/a/1.mp3', voice: 'sage' };
  for (const bytes of [1_048_576, 1_048_577, 1_048_000]) {
    const padded = padToBytes('audio.ready', data, bytes, 5);
    expect(Buffer.byteLength(JSON.stringify({ event: 'audio.ready', data: padded }))).toBe(bytes);
  }
});

it("the checker's idea of the AMQP filter is what the service's filter matches", () => {
  const compiled = compileFilter(AMQP_FILTER);
  if ('problem' in compiled) throw new Error(compiled.problem);
  const cases: [string, Record<string, unknown>][] = [
    ['key.revoked', { id: 'key_1' }],
    ['audio.ready', { id: 'a', voice: 'sage' }],
    ['audio.ready', { id: 'b', voice: 'alloy' }],
    ['voice.converted', { id: 'c', voice: 'sage' }],
    ['voice.converted', { id: 'd', voice: 'river' }],
    ['audio.failed', { id: 'e', voice: 'sage' }],
  ];
  for (const [type, data] of cases) {
    const matches = compiled.matches({
      type,
      id: String(data.id),
      timestamp: '2026-01-01T00:00:00Z',
      data,
    });
    expect([type, data.voice, wantsOf(type, data, true).includes('amqp')]).toEqual([
      type,
      data.voice,
      matches,
    ]);
  }
  expect(wantsOf('audio.failed', {}, false)).toEqual(['http', 'nats', 'amqp']);
});

it('latency splits attempts by whether a fault window was active, with nearest-rank percentiles', () => {
  expect(percentile([1, 2, 3, 4], 50)).toBe(2);
  expect(percentile([], 99)).toBeNull();
  const split = splitLatency(
    [
      { at: 0, ms: 5, status: 202 },
      { at: 100, ms: 900, status: 503 },
      { at: 1_500, ms: 10 },
    ],
    [{ startMs: 1_000, endMs: 2_000 }],
  );
  expect(split.no_fault).toMatchObject({ answered: 1, p50_ms: 5, statuses: { '2xx': 1 } });
  expect(split.during_faults).toMatchObject({ answered: 1, unanswered: 1, p99_ms: 900 });
});

it('a seed is a number, or the hash of any text', () => {
  expect(seedOf('39')).toBe(39);
  expect(seedOf('hello')).toBe(seedOf('hello'));
  expect(seedOf('hello')).not.toBe(seedOf('hellp'));
});

it('--redis cluster deals the primaries’ faults in place of the one server’s; the default plan is as before', () => {
  const single = parseSoakArgs(['--minutes', '30', '--seed', '62'], () => 0);
  const cluster = parseSoakArgs(['--minutes', '30', '--seed', '62', '--redis', 'cluster'], () => 0);
  expect([single.redis, cluster.redis]).toEqual(['single', 'cluster']);
  expect(single.faults.kinds).toEqual(FAULT_KINDS);
  const plan = (kinds: readonly FaultKind[]) =>
    planFaults(mulberry32(62), { ...LONG, kinds }).map((f) => [f.kind, f.atMs, f.target]);
  const swapped = plan(cluster.faults.kinds).map(([kind, ...rest]) => [
    kind === 'kill_primary' ? 'kill_redis' : kind === 'pause_primary' ? 'pause_redis' : kind,
    ...rest,
  ]);
  // Same seed, same schedule: only the Redis faults' kinds (and durations) differ, and so
  // perhaps whether the last fault still fits before the end.
  const before = plan(single.faults.kinds);
  const common = Math.min(before.length, swapped.length);
  expect(common).toBeGreaterThan(100);
  expect(swapped.slice(0, common)).toEqual(before.slice(0, common));
  const kinds = new Set(plan(cluster.faults.kinds).map(([kind]) => kind));
  expect(kinds.has('kill_primary') && kinds.has('pause_primary')).toBe(true);
  expect(kinds.has('kill_redis') || kinds.has('pause_redis')).toBe(false);
  expect(() => parseSoakArgs(['--redis', 'sentinel'], () => 0)).toThrow(/--redis must be/);
});
