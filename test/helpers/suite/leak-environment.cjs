/**
 * Jest's Node environment, which names the test file that leaves something running: a timer, a
 * socket, a server or a child process that keeps the event loop alive after the file's last
 * hook. Jest itself says only "a worker process has failed to exit gracefully", once, with no
 * file, and the next file in that worker inherits the leak. Timers are followed from the
 * file's own `setTimeout` and `setInterval` (the code it loads calls those too); handles are
 * compared with what the worker held when the file began. After a second for closing sockets
 * to close, a file that leaves something gets one stderr line naming it and what it left.
 */
/* global process, setTimeout, module, require -- a CommonJS file Jest loads in Node */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- CommonJS, as Jest loads environments
const { TestEnvironment } = require('jest-environment-node');
// eslint-disable-next-line @typescript-eslint/no-require-imports -- CommonJS, as above
const { promisify } = require('node:util');

const GRACE_MS = 1_000;

/** A timer still due that keeps the loop alive. */
const pending = (timer) => !timer._destroyed && timer.hasRef();

/** What the file left, as "Timeout ×2 (poll, tick), Socket ×1"; empty when nothing. */
function describe(timers, handles) {
  const parts = [];
  if (timers.length > 0) {
    const names = [...new Set(timers.map((t) => t._onTimeout?.name || 'anonymous'))];
    parts.push(`Timeout ×${timers.length} (${names.join(', ')})`);
  }
  const kinds = new Map();
  for (const handle of handles) {
    const kind = handle.constructor?.name ?? 'handle';
    kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
  }
  for (const [kind, count] of kinds) parts.push(`${kind} ×${count}`);
  return parts.join(', ');
}

class LeakReportingEnvironment extends TestEnvironment {
  constructor(config, context) {
    super(config, context);
    this.testPath = context.testPath;
    this.timers = new Set();
    // Followed until they fire (a timeout) or are cleared, so the set holds only live timers
    // and no code of the file is kept alive by it.
    const timers = this.timers;
    const { setTimeout: timeout, setInterval: interval, clearTimeout, clearInterval } = this.global;
    const follow = (start, once) => {
      const followed = function (callback, ...args) {
        if (typeof callback !== 'function') return start.call(this, callback, ...args);
        let timer;
        const run = function (...given) {
          if (once) timers.delete(timer);
          return callback.apply(this, given);
        };
        Object.defineProperty(run, 'name', { value: callback.name });
        timer = start.call(this, run, ...args);
        if (typeof timer === 'object' && timer !== null) timers.add(timer);
        return timer;
      };
      // util.promisify(setTimeout) keeps working as Node's own.
      followed[promisify.custom] = start[promisify.custom];
      return followed;
    };
    const forget = (clear) =>
      function (timer) {
        timers.delete(timer);
        return clear.call(this, timer);
      };
    this.global.setTimeout = follow(timeout, true);
    this.global.setInterval = follow(interval, false);
    this.global.clearTimeout = forget(clearTimeout);
    this.global.clearInterval = forget(clearInterval);
  }

  async setup() {
    await super.setup();
    this.handlesBefore = new Set(process._getActiveHandles());
  }

  left() {
    const timers = [...this.timers].filter(pending);
    const handles = process
      ._getActiveHandles()
      .filter((h) => !this.handlesBefore.has(h) && (h.hasRef?.() ?? true));
    return describe(timers, handles);
  }

  async teardown() {
    const deadline = Date.now() + GRACE_MS;
    let left = this.left();
    while (left !== '' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50).unref());
      left = this.left();
    }
    if (left !== '') {
      process.stderr.write(`[leak] ${this.testPath} left running after its last hook: ${left}\n`);
    }
    this.timers.clear();
    await super.teardown();
  }
}

module.exports = LeakReportingEnvironment;
