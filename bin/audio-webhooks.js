#!/usr/bin/env node
// The operator CLI (package bin). The TypeScript is compiled by `npm run build`.
'use strict';
try {
  require.resolve('../dist/cli/bin.js');
} catch {
  process.stderr.write('audio-webhooks: not built yet; run `npm run build` first\n');
  process.exit(1);
}
require('../dist/cli/bin.js');
