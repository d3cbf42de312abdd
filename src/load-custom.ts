import type { CreateStore } from './settings.js';
import { customEvents, EventDefinitionError, type CustomEvents } from './hooks/custom-events.js';
import type { Hooks } from './hooks/hooks.js';

/** What a fork's src/custom/ holds; every part is optional. */
export interface CustomCode {
  readonly hooks: Partial<Hooks>;
  readonly events: CustomEvents;
  readonly createStore: CreateStore | undefined;
}

/**
 * Loads the fork's own code from src/custom/ (the build's custom/), each file only if it is
 * there: upstream ships no code in that folder (a README only), so a pull never conflicts with
 * it, and the service builds and runs without it. A file that is there but fails to load (a
 * syntax error, a missing import) fails the start, as it should.
 */
export function loadCustom(): CustomCode {
  const hooks = optional('./custom/hooks.js', 'hooks') as Partial<Hooks> | undefined;
  const events = optional('./custom/events.js', 'events');
  if (events !== undefined && !Array.isArray(events)) {
    throw new EventDefinitionError(
      'src/custom/events.ts: `events` must be an array of defineEvent(…)',
    );
  }
  const createStore = optional('./custom/store.js', 'createStore') as CustomCode['createStore'];
  return { hooks: hooks ?? {}, events: customEvents(events ?? []), createStore };
}

/**
 * One export of an optional module. Written with require: the build is CommonJS, and a static
 * import of a file that may not exist would not compile. `require.resolve` first, so only the
 * file's own absence counts as "not there", never a module it fails to import.
 */
function optional(specifier: string, name: string): unknown {
  try {
    require.resolve(specifier);
  } catch {
    return undefined;
  }
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- optional by design (above)
  const loaded = require(specifier) as Record<string, unknown>;
  return loaded[name];
}
