import { loadDotEnv } from '../load-dotenv.js';
import { messageOf } from './cli-errors.js';
import { confirm } from './confirm.js';
import { runCli } from './main.js';

const stdout = { out: (text: string) => process.stdout.write(text) };
// A question needs a person: one who reads the terminal (standard error) and types (standard
// input). A script, a pipe or a test has neither and is never asked.
const person = process.stdin.isTTY && process.stderr.isTTY;
const stderr = {
  out: (text: string) => process.stderr.write(text),
  isTTY: process.stderr.isTTY,
  ...(person ? { confirm } : {}),
};

loadDotEnv();
runCli(process.argv.slice(2), process.env, stdout, stderr).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`audio-webhooks: ${messageOf(error)}\n`);
    process.exitCode = 1;
  },
);
