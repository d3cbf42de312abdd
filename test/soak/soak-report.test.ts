import { check } from '../../soak/checker';
import { buildReport, reportLines } from '../../soak/report';

// The soak's report: docs/reliability.md's top-level fields, and no figures at all for a void run.

const none = { answered: 0, unanswered: 0, p50_ms: null, p99_ms: null, max_ms: null, statuses: {} };
const input = (requested: number) => ({
  seed: 39,
  store: 'local',
  fsync: 'everysec',
  minutes: 1,
  startedAt: Date.parse('2026-11-25T10:00:00Z'),
  endedAt: Date.parse('2026-11-25T10:01:30Z'),
  verdict: check({
    requested,
    sent: [
      { id: 'dlv_1', event: 'audio.failed', dataId: 'f', state: 'exhausted', lastAnswer: '413' },
    ],
    expected: [],
    store: [],
    archive: [],
    destinations: {},
  }),
  faults: [
    {
      kind: 'kill_redis',
      target: 'redis',
      startMs: Date.parse('2026-11-25T10:00:10Z'),
      endMs: Date.parse('2026-11-25T10:00:12Z'),
      details: { pid: 7 },
    },
  ],
  latency: { no_fault: none, during_faults: none },
  drain: { drained: true, seconds_after_last_fault: 3, pending_at_cutoff: {} },
  restarts: { redis: 1 },
  extra: { logs: '/tmp/x' },
});

it('holds the contract’s top-level numbers, the seed and each fault with its kind and time', () => {
  const report = buildReport(input(1));
  expect(report).toMatchObject({
    seed: 39,
    sent: 1,
    ok: 0,
    lost: 0,
    unexpected: 0,
    duplicated: 0,
    refused: 1,
    in_flight: 0,
    void: false,
    refused_reasons: { '413': 1 },
    faults: [
      { kind: 'kill_redis', at: '2026-11-25T10:00:10.000Z', at_s: 10, duration_s: 2, pid: 7 },
    ],
  });
  expect(reportLines(report).join('\n')).toMatch(/sent 1: ok 0, lost 0, refused 1, in flight 0/);
});

it('a void run reports why, and none of the figures', () => {
  const report = buildReport(input(2));
  expect(report.void).toBe(true);
  for (const figure of ['sent', 'ok', 'lost', 'refused', 'in_flight', 'latency'])
    expect(report).not.toHaveProperty(figure);
  expect(reportLines(report).join('\n')).toMatch(/VOID: the harness asked for 2 deliveries/);
});
