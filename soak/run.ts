// `npm run soak`: built by issue 39's work (docs/reliability.md).
process.stderr.write('soak: not built yet\n');
process.exitCode = 2;
