/**
 * `record[key]` when `key` is the record's own, else undefined. A name an operator or a sender
 * chose (a destination named `constructor`, a code in the address) must not find what every
 * object inherits: `in` and a plain index both walk the prototype. Job data and parsed JSON are
 * plain objects, so each lookup keyed by such a name goes through here.
 */
export function ownValue<T>(
  record: Readonly<Record<string, T>> | undefined,
  key: string,
): T | undefined {
  return record !== undefined && Object.hasOwn(record, key) ? record[key] : undefined;
}
