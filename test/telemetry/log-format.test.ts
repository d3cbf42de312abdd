import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { promisify } from 'node:util';
import { createLogger, resolveLogFormat } from '../../src/telemetry/logger';

// LOG_FORMAT: JSON for collectors and pipes, readable lines for a person at a terminal.
function captured(): { stream: Writable; text: () => string } {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString();
      done();
    },
  });
  return { stream, text: () => text };
}

it('json: one JSON object a line, secrets redacted', () => {
  const out = captured();
  createLogger('info', out.stream as never, 'json').info({ secret: 's3cr3t', id: 'a' }, 'hello');
  const line = JSON.parse(out.text()) as Record<string, unknown>;
  expect(line).toMatchObject({ msg: 'hello', id: 'a', secret: '[redacted]', level: 30 });
});

it('pretty: one readable line with the level, the message and the fields, secrets still redacted', () => {
  const out = captured();
  createLogger('info', out.stream as never, 'pretty').info({ secret: 's3cr3t', id: 'a' }, 'hello');
  expect(out.text()).toMatch(
    /^\[\d{2}:\d{2}:\d{2}\.\d{3}\] INFO: hello \{"secret":"\[redacted\]","id":"a"\}\n$/,
  );
  expect(out.text()).not.toContain('s3cr3t');
});

it('auto: pretty on a terminal, JSON otherwise', async () => {
  expect(resolveLogFormat('auto', true)).toBe('pretty');
  expect(resolveLogFormat('auto', false)).toBe('json');
  expect(resolveLogFormat('json', true)).toBe('json');
  // The built logger on a real pseudo-terminal (util-linux's `script`) and on a pipe.
  const script = `require(${JSON.stringify(join(__dirname, '..', '..', 'dist', 'telemetry', 'logger.js'))}).createLogger('info', undefined, 'auto').info('hello')`;
  const run = promisify(execFile);
  const piped = await run(process.execPath, ['-e', script]);
  expect(JSON.parse(piped.stdout)).toMatchObject({ msg: 'hello' });
  const onTerminal = await run(
    'script',
    ['-qfec', `'${process.execPath}' -e "${script.replace(/"/g, '\\"')}"`, '/dev/null'],
    {
      env: { PATH: process.env.PATH ?? '', TERM: 'xterm' },
    },
  );
  expect(onTerminal.stdout).toMatch(/INFO.*: .*hello/);
  expect(onTerminal.stdout).not.toContain('"msg"');
});

it('pretty on a terminal: a request and the start line are one line each', async () => {
  // The built logger and start-up report under a pseudo-terminal, as `npm start` shows them:
  // a request's line was 14 lines and the start line about 30.
  const dist = join(__dirname, '..', '..', 'dist');
  const script = [
    `const { createLogger } = require(${JSON.stringify(join(dist, 'telemetry', 'logger.js'))});`,
    `const { loadConfig } = require(${JSON.stringify(join(dist, 'settings.js'))});`,
    `const { reportStartup } = require(${JSON.stringify(join(dist, 'startup-report.js'))});`,
    "const logger = createLogger('info', undefined, 'auto');",
    "reportStartup(loadConfig({ WEBHOOK_SECRETS: 's', CDN_URL: 'https://cdn.example.com' }), logger, { listen: '127.0.0.1:3000' });",
    'logger.info({',
    "  req: { id: 'b0e3f1c2-8d4a-4c1e-9f57-3a2b1c0d9e8f', method: 'POST', url: '/webhooks', remoteAddress: '127.0.0.1' },",
    "  res: { statusCode: 202 }, responseTime: 3, event: 'audio.ready', dataId: 'demo-1',",
    "}, 'request completed');",
  ].join('\n');
  const file = join(mkdtempSync(join(tmpdir(), 'aw-log-')), 'log.js');
  writeFileSync(file, script);
  const { stdout } = await promisify(execFile)(
    'script',
    ['-qfec', `'${process.execPath}' '${file}'`, '/dev/null'],
    { env: { PATH: process.env.PATH ?? '', TERM: 'xterm' } },
  );
  const lines = stdout
    // eslint-disable-next-line no-control-regex -- the terminal's colours
    .replace(/\u001b\[[0-9;]*m/g, '')
    .split(/\r?\n/)
    .filter((line) => line !== '');
  // Every line is a log line of its own: none is the continuation of another.
  for (const line of lines) expect(line).toMatch(/^\[\d{2}:\d{2}:\d{2}\.\d{3}\] [A-Z]+: /);
  expect(lines.filter((line) => line.includes('audio-webhooks started'))).toHaveLength(1);
  const [request] = lines.filter((line) => line.includes('request completed'));
  expect(request).toMatch(/INFO: request completed POST \/webhooks 202 3 ms \{.*"dataId":"demo-1"/);
  expect(request).toContain('"id":"b0e3f1c2-8d4a-4c1e-9f57-3a2b1c0d9e8f"');
});
