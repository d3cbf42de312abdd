import { isKnownEvent } from '../provider-spec/events.js';
import { isDefinedEvent, type EventDefinition } from './define-event.js';

/** The fork's events by name; empty when src/custom/events.ts is absent. */
export type CustomEvents = ReadonlyMap<string, EventDefinition>;

export const NO_CUSTOM_EVENTS: CustomEvents = new Map();

/** A custom event that cannot be served as declared: its message is the one line start-up prints. */
export class EventDefinitionError extends Error {
  override name = 'EventDefinitionError';
}

/**
 * Checks the fork's `events` once, at start-up, in every role: each made by `defineEvent`, with
 * a name that is neither built in (the built-ins' handling and exhaustive typing stay theirs)
 * nor declared twice.
 */
export function customEvents(
  definitions: readonly unknown[],
  source = 'src/custom/events.ts',
): CustomEvents {
  const events = new Map<string, EventDefinition>();
  for (const [index, definition] of definitions.entries()) {
    if (!isDefinedEvent(definition)) {
      throw new EventDefinitionError(
        `${source}: events[${index}] was not made by defineEvent (import it from the framework's index)`,
      );
    }
    const { name } = definition;
    if (typeof name !== 'string' || name === '') {
      throw new EventDefinitionError(`${source}: events[${index}] has no name`);
    }
    if (isKnownEvent(name)) {
      throw new EventDefinitionError(
        `${source}: event "${name}" is built in; use a hook in src/custom/hooks.ts to react to it`,
      );
    }
    if (events.has(name)) {
      throw new EventDefinitionError(`${source}: event "${name}" is declared twice`);
    }
    events.set(name, definition);
  }
  return events;
}
