import { loadDotEnv } from '../load-dotenv.js';
import { messageOf } from './cli-errors.js';
import { runCli } from './main.js';

const stdout = { out: (text: string) => process.stdout.write(text) };
const stderr = { out: (text: string) => process.stderr.write(text), isTTY: process.stderr.isTTY };

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
