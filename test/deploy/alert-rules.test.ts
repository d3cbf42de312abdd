import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';

// deploy/prometheus/alerts.yml against promtool (Debian's `prometheus` package; .ci/run installs
// it): the rules parse, their unit tests pass, and those tests fail when a threshold moves.
const DIR = join(__dirname, '..', '..', 'deploy', 'prometheus');
const RULES = join(DIR, 'alerts.yml');
const TESTS = join(DIR, 'alerts.test.yml');
const OPERATIONS = join(__dirname, '..', '..', 'docs', 'operations.md');

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  annotations: Record<string, string>;
}
const rules = (
  parse(readFileSync(RULES, 'utf8')) as { groups: { rules: Rule[] }[] }
).groups.flatMap((group) => group.rules);

function promtool(...args: string[]): { status: number | null; output: string } {
  const run = spawnSync('promtool', args, { encoding: 'utf8', timeout: 60_000 });
  if (run.error) throw run.error;
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

it('promtool check rules: the file is valid, with every alert the contract names', () => {
  const { status, output } = promtool('check', 'rules', RULES);
  expect({ status, output }).toMatchObject({
    status: 0,
    output: expect.stringContaining('SUCCESS'),
  });
  expect(rules.map((r) => r.alert)).toEqual(
    expect.arrayContaining([
      'AudioWebhooksDown',
      'AudioWebhooksRedisUnavailable',
      'AudioWebhooksBacklogAging',
      'AudioWebhooksDeliveriesRefused',
      'AudioWebhooksForwardDestinationPaused',
      'AudioWebhooksForwardsFailing',
      'AudioWebhooksStoreFull',
    ]),
  );
});

it('promtool test rules: every rule is tested firing and not firing, and passes', () => {
  const { status, output } = promtool('test', 'rules', TESTS);
  expect({ status, output }).toMatchObject({
    status: 0,
    output: expect.stringContaining('SUCCESS'),
  });
  const cases = (
    parse(readFileSync(TESTS, 'utf8')) as {
      tests: { alert_rule_test: { alertname: string; exp_alerts?: unknown[] }[] }[];
    }
  ).tests.flatMap((test) => test.alert_rule_test);
  for (const { alert } of rules) {
    const mine = cases.filter((c) => c.alertname === alert);
    expect({ alert, firing: mine.some((c) => (c.exp_alerts ?? []).length > 0) }).toEqual({
      alert,
      firing: true,
    });
    expect({ alert, quiet: mine.some((c) => (c.exp_alerts ?? []).length === 0) }).toEqual({
      alert,
      quiet: true,
    });
  }
});

// One threshold moved per rule: the unit tests must notice each, naming the rule.
const MOVED: readonly [alert: string, field: 'expr' | 'for', from: string, to: string][] = [
  ['AudioWebhooksDown', 'for', '2m', '5m'],
  ['AudioWebhooksRedisUnavailable', 'for', '1m', '3m'],
  ['AudioWebhooksDeliveriesRefused', 'expr', '> 0.05', '> 0.10'],
  ['AudioWebhooksBacklogAging', 'expr', '> 1800', '> 3600'],
  ['AudioWebhooksForwardDestinationPaused', 'for', '5m', '10m'],
  ['AudioWebhooksForwardsFailing', 'expr', 'offset 15m\n', 'offset 1m\n'],
  ['AudioWebhooksStoreFull', 'expr', '< 0.05', '< 0.03'],
  ['AudioWebhooksRedisMemoryHigh', 'expr', '> 0.7', '> 0.9'],
];

it.each(MOVED)(
  'a copy with %s moved (%s: %s → %s) fails its unit test',
  (alert, field, from, to) => {
    const dir = mkdtempSync(join(tmpdir(), 'aw-alerts-'));
    const document = parse(readFileSync(RULES, 'utf8')) as { groups: { rules: Rule[] }[] };
    const rule = document.groups.flatMap((g) => g.rules).find((r) => r.alert === alert);
    if (rule === undefined) throw new Error(`no rule ${alert}`);
    const before = rule[field] ?? '';
    expect(before).toContain(from);
    rule[field] = before.replace(from, to);
    writeFileSync(join(dir, 'alerts.yml'), stringify(document));
    copyFileSync(TESTS, join(dir, 'alerts.test.yml'));
    expect(promtool('check', 'rules', join(dir, 'alerts.yml')).status).toBe(0);
    const { status, output } = promtool('test', 'rules', join(dir, 'alerts.test.yml'));
    expect(status).not.toBe(0);
    expect(output).toContain(`alertname: ${alert},`);
  },
);

it('every alert has a summary, a description and a runbook_url to a heading of docs/operations.md', () => {
  // GitHub's anchors: the heading in lower case, without punctuation, spaces as hyphens.
  const anchors = readFileSync(OPERATIONS, 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('#'))
    .map((line) =>
      line
        .replace(/^#+\s*/, '')
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\s_-]/gu, '')
        .replace(/\s/g, '-'),
    );
  for (const { alert, annotations } of rules) {
    expect({ alert, summary: annotations.summary, description: annotations.description }).toEqual({
      alert,
      summary: expect.any(String),
      description: expect.any(String),
    });
    const [path, anchor] = annotations.runbook_url?.split('#') ?? [];
    expect({ alert, path, known: anchors.includes(anchor ?? '') }).toEqual({
      alert,
      path: 'docs/operations.md',
      known: true,
    });
  }
});
