import { createInterface } from 'node:readline';

/**
 * Asks a yes/no question on the terminal (the question on standard error, which keeps standard
 * output for the answer): true for `y` or `yes`; anything else, Ctrl-C or Ctrl-D is no.
 */
export function confirm(question: string): Promise<boolean> {
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
