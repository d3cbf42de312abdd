#!/usr/bin/env node
// Makes deploy/components/monitoring/prometheus-rule.yaml from deploy/prometheus/alerts.yml: run
//   node scripts/write-prometheus-rule.js
// after changing alerts.yml. `--stdout` prints the file instead of writing it;
// test/deploy/kubernetes-manifests.test.ts compares that with the file, so a hand edit or a
// forgotten run fails the tests, and the fix is this command, not a copy by hand.
//
// Why a script and a checked-in result, rather than kustomize deriving it: the base must render
// with a plain `kubectl kustomize deploy/kubernetes` (Debian's kubernetes-client, Argo CD, Flux),
// and so must deploy/components/monitoring, which holds the PrometheusRule; neither can make one
// out of alerts.yml.
// - A PrometheusRule holds the groups as structure under spec.groups; alerts.yml holds them at its
//   top, and Prometheus and promtool refuse a rule file with any other key (apiVersion, kind,
//   spec), so one file cannot be both.
// - kustomize reads a plain file only through configMapGenerator, as a string; `replacements`
//   then copies that string into spec.groups as a string, not as groups (tried with kustomize
//   v5.5.0). alerts.yml is also outside the base, which kustomize refuses to read from.
// - What could (exec or KRM-function plugins, helmCharts) needs --enable-alpha-plugins,
//   --enable-exec or --enable-helm and another program wherever the base is rendered.
'use strict';
const { readFileSync, writeFileSync } = require('node:fs');
const { join, relative } = require('node:path');
const prettier = require('prettier');
const { parse, stringify } = require('yaml');

const root = join(__dirname, '..');
const ALERTS = join(root, 'deploy', 'prometheus', 'alerts.yml');
const RULE = join(root, 'deploy', 'components', 'monitoring', 'prometheus-rule.yaml');

const HEADER = `# Made from deploy/prometheus/alerts.yml by scripts/write-prometheus-rule.js: do not edit it;
# change alerts.yml (the thresholds' reasons are its comments) and run the script again.
# The alerts as a PrometheusRule, for the Prometheus Operator, in deploy/components/monitoring
# (the base applies without the Operator's kinds). A Prometheus without the Operator loads
# alerts.yml as a rule file instead. The Operator's ruleSelector may ask for a label
# (kube-prometheus-stack: release: <its release>): add it in your overlay.
`;

/** The PrometheusRule's text: alerts.yml's groups, unchanged, formatted as Prettier checks it. */
async function prometheusRule() {
  const { groups } = parse(readFileSync(ALERTS, 'utf8'));
  const rule = {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: { name: 'audio-webhooks', labels: { 'app.kubernetes.io/name': 'audio-webhooks' } },
    spec: { groups },
  };
  // lineWidth 0: no folded lines; Prettier then settles the quotes, as `npm run lint` wants them.
  const text = HEADER + stringify(rule, { lineWidth: 0 });
  const options = await prettier.resolveConfig(RULE);
  return prettier.format(text, { ...options, filepath: RULE });
}

void prometheusRule().then(
  (text) => {
    if (process.argv.includes('--stdout')) process.stdout.write(text);
    else {
      writeFileSync(RULE, text);
      process.stderr.write(`wrote ${relative(root, RULE)}\n`);
    }
  },
  (error) => {
    process.stderr.write(
      `write-prometheus-rule: ${error instanceof Error ? error.stack : error}\n`,
    );
    process.exitCode = 1;
  },
);
