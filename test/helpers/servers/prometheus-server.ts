import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { eventually } from '../../../src/util/eventually';
import { freePort } from '../../../harness/private-redis';

/** One alert as GET /api/v1/alerts lists it. */
export interface ActiveAlert {
  readonly labels: Record<string, string>;
  readonly annotations: Record<string, string>;
  readonly state: 'pending' | 'firing';
  readonly activeAt: string;
  readonly value: string;
}

export interface PrometheusServer {
  readonly url: string;
  /** An instant query's series (GET /api/v1/query). */
  query(expr: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]>;
  alerts(): Promise<ActiveAlert[]>;
  /** SIGTERM to its PID, SIGKILL after 10 s; resolves once it exited. */
  stop(): Promise<void>;
}

export interface ScrapeTarget {
  readonly port: number;
  /** Labels of the target, e.g. `{ component: 'receiver' }` as alerts.yml expects them. */
  readonly labels: Record<string, string>;
}

/**
 * A real Prometheus (/usr/bin/prometheus; Debian's `prometheus` package, which .ci/run installs)
 * on a free loopback port, scraping `targets` under `job` and evaluating `ruleFile`, both every
 * second, with its storage in a temp folder of its own.
 */
export async function startPrometheus({
  job,
  targets,
  ruleFile,
}: {
  job: string;
  targets: readonly ScrapeTarget[];
  ruleFile: string;
}): Promise<PrometheusServer> {
  const dir = mkdtempSync(join(tmpdir(), 'aw-prometheus-'));
  const config = join(dir, 'prometheus.yml');
  writeFileSync(
    config,
    stringify({
      global: { scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' },
      rule_files: [ruleFile],
      scrape_configs: [
        {
          job_name: job,
          static_configs: targets.map((t) => ({
            targets: [`127.0.0.1:${String(t.port)}`],
            labels: t.labels,
          })),
        },
      ],
    }),
  );
  const port = await freePort();
  const url = `http://127.0.0.1:${String(port)}`;
  const child = spawn(
    'prometheus',
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${String(port)}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      resolve();
    });
  });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const kill = setTimeout(() => {
      child.kill('SIGKILL');
    }, 10_000);
    child.kill('SIGTERM');
    await exited;
    clearTimeout(kill);
  };
  const exitedEarly = new Promise<never>((_resolve, reject) => {
    child.once('error', reject);
    void exited.then(() => {
      reject(new Error(`prometheus exited: ${stderr}`));
    });
  });
  // After start an exit is stop()'s, or shows in the queries that fail.
  exitedEarly.catch(() => undefined);
  const ready = eventually(
    async () => {
      try {
        return (await fetch(`${url}/-/ready`)).ok ? true : undefined;
      } catch {
        return undefined;
      }
    },
    { timeoutMs: 30_000 },
  );
  try {
    await Promise.race([ready, exitedEarly]);
  } catch (error: unknown) {
    await stop();
    throw new Error(`prometheus did not start: ${stderr}`, { cause: error });
  }

  async function api<T>(path: string): Promise<T> {
    const res = await fetch(`${url}${path}`, { signal: AbortSignal.timeout(5_000) });
    const body = (await res.json()) as { status: string; data: T; error?: string };
    if (body.status !== 'success') throw new Error(`${path}: ${body.error ?? res.status}`);
    return body.data;
  }
  return {
    url,
    query: async (expr) =>
      (
        await api<{ result: { metric: Record<string, string>; value: [number, string] }[] }>(
          `/api/v1/query?query=${encodeURIComponent(expr)}`,
        )
      ).result,
    alerts: async () => (await api<{ alerts: ActiveAlert[] }>('/api/v1/alerts')).alerts,
    stop,
  };
}
