import { execFile } from 'node:child_process';
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

it('pretty: a readable line with the level and message, secrets still redacted', () => {
  const out = captured();
  createLogger('info', out.stream as never, 'pretty').info({ secret: 's3cr3t', id: 'a' }, 'hello');
  expect(out.text()).toMatch(
    /^\[\d{2}:\d{2}:\d{2}\.\d{3}\] INFO: hello\n {4}secret: "\[redacted\]"\n {4}id: "a"\n$/,
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
