import { createInterface } from 'node:readline';
import { loadDotEnv } from '../load-dotenv.js';
import { messageOf } from './cli-errors.js';
import { runCli } from './main.js';
import { printable } from '../util/printable.js';

// `| head` closes the pipe once it has the lines it wants: the rest of the answer has no reader,
// and the command ends as a shell's own tools do, quietly and with success, whatever it was doing.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(0);
    throw error;
  });
}

const stdout = { out: (text: string) => process.stdout.write(text) };
// A question needs a person: one who reads the terminal (standard error) and types (standard
// input). A script, a pipe or a test has neither and is never asked.
const person = process.stdin.isTTY && process.stderr.isTTY;
const stderr = {
  out: (text: string) => process.stderr.write(text),
  isTTY: process.stderr.isTTY,
  ...(person ? { confirm } : {}),
};

/**
 * Asks a yes/no question on the terminal (the question on standard error, which keeps standard
 * output for the answer): true for `y` or `yes`; anything else, Ctrl-C or Ctrl-D is no.
 */
function confirm(question: string): Promise<boolean> {
  return new Promise((resolve) => {
    const terminal = createInterface({ input: process.stdin, output: process.stderr });
    let answered = false;
    terminal.question(`${question} [y/N] `, (answer) => {
      answered = true;
      terminal.close();
      resolve(/^y(es)?$/i.test(answer.trim()));
    });
    // Ctrl-C asks readline to pause by default, which would leave the question unanswered.
    terminal.on('SIGINT', () => {
      terminal.close();
    });
    terminal.on('close', () => {
      if (answered) return;
      process.stderr.write('\n');
      resolve(false);
    });
  });
}

loadDotEnv();
runCli(process.argv.slice(2), process.env, stdout, stderr).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`audio-webhooks: ${printable(messageOf(error), '\n')}\n`);
    process.exitCode = 1;
  },
);
