import fc from 'fast-check';
import {
  compileFilter,
  type FilterableMessage,
} from '../../src/forwarding/settings/message-filter';

const message: FilterableMessage = {
  type: 'audio.ready',
  id: 'tts_8f3a',
  timestamp: '2026-11-24T18:02:11.482Z',
  data: {
    id: 'tts_8f3a',
    kind: 'tts',
    voice: 'nova',
    duration: 12.5,
    tags: ['news', 'de'],
    speaker: { name: 'Ada', lang: 'en-GB' },
    caption: null,
  },
  stored: { name: 'tts_8f3a.mp3', bytes: 48213 },
};

function compiled(filter: unknown) {
  const result = compileFilter(filter);
  if ('problem' in result) throw new Error(result.problem);
  return result;
}

/** The filter as it would be written in FORWARD_CONFIG's JSON (so `__proto__` is a plain key). */
const written = (json: string): unknown => JSON.parse(json);

describe('every operator', () => {
  it.each<[string, unknown, boolean]>([
    ['a plain value is $eq', { type: 'audio.ready' }, true],
    ['a plain value that differs', { type: 'key.revoked' }, false],
    ['$eq', { id: { $eq: 'tts_8f3a' } }, true],
    ['$eq on a number', { data: { duration: { $eq: 12.5 } } }, true],
    ['$neq', { type: { $neq: 'key.revoked' } }, true],
    ['$neq of the value', { type: { $neq: 'audio.ready' } }, false],
    ['$gt', { data: { duration: { $gt: 12 } } }, true],
    ['$gt at the value', { data: { duration: { $gt: 12.5 } } }, false],
    ['$gte at the value', { data: { duration: { $gte: 12.5 } } }, true],
    ['$lt', { data: { duration: { $lt: 13 } } }, true],
    ['$lte at the value', { data: { duration: { $lte: 12.5 } } }, true],
    ['$lte below', { data: { duration: { $lte: 12 } } }, false],
    ['$gt compares strings as strings', { timestamp: { $gt: '2026-11-24' } }, true],
    ['$gt never compares a string with a number', { data: { voice: { $gt: 0 } } }, false],
    ['$in', { data: { voice: { $in: ['nova', 'alloy'] } } }, true],
    ['$in without the value', { data: { voice: { $in: ['alloy'] } } }, false],
    ['$nin', { data: { voice: { $nin: ['alloy'] } } }, true],
    ['$nin with the value', { data: { voice: { $nin: ['nova'] } } }, false],
    ['$exist true', { stored: { $exist: true } }, true],
    ['$exist false of a present field', { stored: { $exist: false } }, false],
    ['$exist false of a missing field', { data: { model: { $exist: false } } }, true],
    ['$exist true of a field holding null', { data: { caption: { $exist: true } } }, true],
    ['$startsWith', { id: { $startsWith: 'tts_' } }, true],
    ['$startsWith that does not', { id: { $startsWith: 'stt_' } }, false],
    ['$endsWith', { stored: { name: { $endsWith: '.mp3' } } }, true],
    ['$endsWith that does not', { stored: { name: { $endsWith: '.wav' } } }, false],
    ['$startsWith is false for a number', { data: { duration: { $startsWith: '1' } } }, false],
    ['two operators: both must hold', { data: { duration: { $gt: 10, $lt: 12 } } }, false],
    ['two operators that both hold', { data: { duration: { $gt: 10, $lt: 13 } } }, true],
  ])('%s', (_name, filter, expected) => {
    expect(compiled(filter).matches(message)).toBe(expected);
  });
});

describe('nesting: an object of fields means every one of them, at any depth', () => {
  it.each<[string, unknown, boolean]>([
    [
      "the contract's example",
      { type: 'audio.ready', data: { voice: { $in: ['nova', 'alloy'] } } },
      true,
    ],
    ['a nested field, not the whole subdocument', { data: { speaker: { name: 'Ada' } } }, true],
    ['two levels down', { data: { speaker: { lang: { $startsWith: 'en-' } } } }, true],
    [
      'one field of several that does not hold',
      { type: 'audio.ready', data: { kind: 'stt' } },
      false,
    ],
    ['a field under a missing one', { data: { model: { name: 'x' } } }, false],
    ['a list matches by any element', { data: { tags: 'de' } }, true],
    ['$in on a list', { data: { tags: { $in: ['fr', 'news'] } } }, true],
    ['$nin on a list: no element may be in it', { data: { tags: { $nin: ['de'] } } }, false],
    ['null matches null', { data: { caption: null } }, true],
    ['null matches a missing field', { data: { model: null } }, true],
    ['the empty filter matches every message', {}, true],
  ])('%s', (_name, filter, expected) => {
    expect(compiled(filter).matches(message)).toBe(expected);
  });
});

describe('$and, $or and $not at the message and at a field', () => {
  it.each<[string, unknown, boolean]>([
    ['$and at the message', { $and: [{ type: 'audio.ready' }, { data: { kind: 'tts' } }] }, true],
    [
      '$and with one that fails',
      { $and: [{ type: 'audio.ready' }, { data: { kind: 'stt' } }] },
      false,
    ],
    ['$or at the message', { $or: [{ type: 'key.revoked' }, { data: { voice: 'nova' } }] }, true],
    [
      '$or with none that holds',
      { $or: [{ type: 'key.revoked' }, { data: { voice: 'x' } }] },
      false,
    ],
    ['$not at the message', { $not: { type: 'key.revoked' } }, true],
    ['$not of what holds', { $not: { data: { speaker: { name: 'Ada' } } } }, false],
    ['$and at a field', { data: { duration: { $and: [{ $gt: 10 }, { $lt: 13 }] } } }, true],
    ['$or at a field', { data: { voice: { $or: ['alloy', { $startsWith: 'no' }] } } }, true],
    ['$not of an operator at a field', { data: { voice: { $not: { $in: ['nova'] } } } }, false],
    ['$not of a plain value at a field', { data: { voice: { $not: 'alloy' } } }, true],
    ['$not of fields under a field', { data: { $not: { speaker: { lang: 'de' } } } }, true],
    [
      'fields and a logical together',
      { type: 'audio.ready', $or: [{ data: { voice: 'alloy' } }, { stored: { $exist: true } }] },
      true,
    ],
  ])('%s', (_name, filter, expected) => {
    expect(compiled(filter).matches(message)).toBe(expected);
  });

  it('keeps the filter as written, for `forward status --json`', () => {
    const filter = { data: { voice: { $neq: 'nova' } } };
    expect(compiled(filter).source).toEqual(filter);
  });
});

describe('a filter that cannot be used says what and where', () => {
  it.each<[unknown, string]>([
    [{ data: { voice: { $regex: '^n' } } }, 'filter at data.voice: unknown operator $regex'],
    [{ $where: 'this.type === "x"' }, 'filter: unknown operator $where'],
    [
      { data: { tags: { $elemMatch: { $eq: 'de' } } } },
      'filter at data.tags: unknown operator $elemMatch',
    ],
    [{ data: { voice: { $exists: true } } }, 'filter at data.voice: unknown operator $exists'],
    [{ type: { $ne: 'x' } }, 'filter at type: unknown operator $ne'],
    [{ data: { $nor: [{ voice: 'x' }] } }, 'filter at data: unknown operator $nor'],
    [
      { data: { voice: { $in: 'nova' } } },
      'filter at data.voice: $in takes a list of strings, numbers, booleans or nulls',
    ],
    [
      { data: { voice: { $nin: [{ a: 1 }] } } },
      'filter at data.voice: $nin takes a list of strings, numbers, booleans or nulls',
    ],
    [{ id: { $startsWith: 1 } }, 'filter at id: $startsWith takes a string'],
    [{ id: { $endsWith: null } }, 'filter at id: $endsWith takes a string'],
    [{ stored: { $exist: 'yes' } }, 'filter at stored: $exist takes true or false'],
    [
      { data: { duration: { $gt: true } } },
      'filter at data.duration: $gt takes a string or a number',
    ],
    [
      { data: { speaker: { $eq: { name: 'Ada' } } } },
      'filter at data.speaker: $eq takes a string, number, boolean or null',
    ],
    [{ data: { tags: ['news', 'de'] } }, 'filter at data.tags: a list goes in $in or $nin'],
    [{ $and: [] }, 'filter: $and takes a non-empty list of filters'],
    [{ data: { $or: { voice: 'x' } } }, 'filter at data: $or takes a non-empty list of filters'],
    [{ data: { voice: 'nova', $gt: 1 } }, 'filter at data: mixes operators ($gt) and fields'],
    [{ $eq: 'x' }, 'filter: $eq needs a field, e.g. {"type": {…}}'],
    [{ $not: 'audio.ready' }, 'filter: must be an object of fields'],
    ['audio.ready', 'filter: must be an object of fields'],
    [null, 'filter: must be an object of fields'],
    [[{ type: 'x' }], 'filter: a list goes in $in or $nin'],
    [
      { data: { 'speaker.name': 'Ada' } },
      'filter at data: field name "speaker.name" holds a dot: nest objects',
    ],
    [{ data: { '': 1 } }, 'filter at data: an empty field name'],
    [
      { $or: [{ type: 'x' }, { data: { voice: { $in: 1 } } }] },
      'filter at data.voice: $in takes a list of strings, numbers, booleans or nulls',
    ],
  ])('%j: %s', (filter, problem) => {
    expect(compileFilter(filter)).toEqual({ problem });
  });

  it.each([
    ['{"__proto__": {"polluted": true}}', 'filter: field name "__proto__" is not allowed'],
    ['{"data": {"__proto__": {"x": 1}}}', 'filter at data: field name "__proto__" is not allowed'],
    ['{"constructor": {"$exist": true}}', 'filter: field name "constructor" is not allowed'],
    [
      '{"data": {"constructor": {"name": "Object"}}}',
      'filter at data: field name "constructor" is not allowed',
    ],
    [
      '{"data": {"toString": {"$exist": true}}}',
      'filter at data: field name "toString" is not allowed',
    ],
    ['{"data": {"prototype": 1}}', 'filter at data: field name "prototype" is not allowed'],
  ])('prototype tricks are refused: %s', (json, problem) => {
    expect(compileFilter(written(json))).toEqual({ problem });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

// ── The compiled filter agrees with a reference evaluator written from the semantics ──

/** The field at `path`, only through objects' own fields; undefined when there is none. */
function valueAt(root: unknown, path: readonly string[]): unknown {
  let value = root;
  for (const key of path) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
    if (!Object.hasOwn(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/** A list is matched as itself and by each element; null and missing are one. */
function anyOf(value: unknown, test: (candidate: unknown) => boolean): boolean {
  return (Array.isArray(value) ? [value, ...(value as unknown[])] : [value]).some(test);
}
const same = (a: unknown, b: unknown) => (a ?? null) === (b ?? null);

function compare(operator: string, arg: unknown, value: unknown): boolean {
  const ordered = (test: (a: string | number, b: string | number) => boolean) =>
    anyOf(
      value,
      (c) =>
        (typeof c === 'string' || typeof c === 'number') &&
        typeof c === typeof arg &&
        test(c, arg as string | number),
    );
  const text = (test: (c: string) => boolean) =>
    anyOf(value, (c) => typeof c === 'string' && test(c));
  switch (operator) {
    case '$eq':
      return anyOf(value, (c) => same(c, arg));
    case '$neq':
      return !compare('$eq', arg, value);
    case '$in':
      return anyOf(value, (c) => (arg as unknown[]).some((a) => same(c, a)));
    case '$nin':
      return !compare('$in', arg, value);
    case '$gt':
      return ordered((c, a) => c > a);
    case '$gte':
      return ordered((c, a) => c >= a);
    case '$lt':
      return ordered((c, a) => c < a);
    case '$lte':
      return ordered((c, a) => c <= a);
    case '$exist':
      return (value !== undefined) === arg;
    case '$startsWith':
      return text((c) => c.startsWith(arg as string));
    case '$endsWith':
      return text((c) => c.endsWith(arg as string));
    default:
      throw new Error(`no operator ${operator}`);
  }
}

function holds(filter: unknown, root: unknown, path: readonly string[] = []): boolean {
  if (typeof filter !== 'object' || filter === null) {
    return compare('$eq', filter, valueAt(root, path));
  }
  return Object.entries(filter).every(([key, arg]) => {
    if (key === '$and') return (arg as unknown[]).every((f) => holds(f, root, path));
    if (key === '$or') return (arg as unknown[]).some((f) => holds(f, root, path));
    if (key === '$not') return !holds(arg, root, path);
    if (key.startsWith('$')) return compare(key, arg, valueAt(root, path));
    return holds(arg, root, [...path, key]);
  });
}

const scalar = fc.constantFrom('a', 'ab', '', 0, 1, 1.5, true, null);
const text = fc.constantFrom('a', 'ab', '');
const ordered = fc.constantFrom('a', 'ab', 0, 1, 1.5);
const arbitraryMessage = fc.record(
  {
    type: text,
    id: text,
    timestamp: text,
    data: fc.record(
      {
        voice: scalar,
        n: scalar,
        tags: fc.array(scalar, { maxLength: 3 }),
        nested: fc.oneof(
          fc.constant(null),
          fc.constant('ab'),
          fc.record({ k: scalar }, { requiredKeys: [] }),
        ),
      },
      { requiredKeys: ['voice', 'tags'] },
    ),
    stored: fc.record({ name: text }),
  },
  { requiredKeys: ['type', 'id', 'timestamp', 'data'] },
);

const operator = fc.oneof(
  fc.record({ $eq: scalar }),
  fc.record({ $neq: scalar }),
  fc.record({ $gt: ordered }),
  fc.record({ $gte: ordered }),
  fc.record({ $lt: ordered }),
  fc.record({ $lte: ordered }),
  fc.record({ $in: fc.array(scalar, { maxLength: 3 }) }),
  fc.record({ $nin: fc.array(scalar, { maxLength: 3 }) }),
  fc.record({ $exist: fc.boolean() }),
  fc.record({ $startsWith: text }),
  fc.record({ $endsWith: text }),
);
/** Mostly one operator, sometimes two on one field (both must hold). */
const operators = fc.oneof(
  { arbitrary: operator, weight: 3 },
  { arbitrary: fc.tuple(operator, operator).map(([a, b]) => ({ ...a, ...b })), weight: 1 },
);
/** Every recursive choice shares one depth: filters stay small enough to hold now and then. */
const depth = { maxDepth: 3, depthIdentifier: 'filter' } as const;
const group = (of: fc.Arbitrary<unknown>) => fc.array(of, { minLength: 1, maxLength: 2 });
/** `$and`, `$or`, `$not` over what `self` generates at the same place. */
const logic = (self: fc.Arbitrary<unknown>) =>
  fc.oneof(
    depth,
    fc.record({ $and: group(self) }),
    fc.record({ $or: group(self) }),
    fc.record({ $not: self }),
  );
/** One of the fields, sometimes two, sometimes with a logical over the same place. */
const fieldsAt = (fields: Record<string, fc.Arbitrary<unknown>>, self: fc.Arbitrary<unknown>) => {
  const one = fc.oneof(
    ...Object.entries(fields).map(([name, value]) => fc.record({ [name]: value })),
  );
  return fc
    .tuple(
      one,
      fc.oneof({ arbitrary: fc.constant(undefined), weight: 3 }, { arbitrary: one, weight: 1 }),
      fc.oneof(
        { arbitrary: fc.constant(undefined), weight: 3 },
        { arbitrary: logic(self), weight: 1 },
      ),
    )
    .map(([first, second, logical]) => ({ ...first, ...second, ...logical }));
};

const { top } = fc.letrec((tie) => ({
  leaf: fc.oneof(depth, scalar, operators, logic(tie('leaf'))),
  nested: fc.oneof(depth, tie('leaf'), fieldsAt({ k: tie('leaf') }, tie('nested'))),
  stored: fc.oneof(depth, tie('leaf'), fieldsAt({ name: tie('leaf') }, tie('stored'))),
  data: fc.oneof(
    depth,
    tie('leaf'),
    fieldsAt(
      { voice: tie('leaf'), n: tie('leaf'), tags: tie('leaf'), nested: tie('nested') },
      tie('data'),
    ),
  ),
  top: fieldsAt(
    {
      type: tie('leaf'),
      id: tie('leaf'),
      timestamp: tie('leaf'),
      data: tie('data'),
      stored: tie('stored'),
    },
    tie('top'),
  ),
}));

it('agrees with a reference evaluator on random messages and filters', () => {
  const outcomes = { true: 0, false: 0 };
  fc.assert(
    fc.property(
      top,
      fc.array(arbitraryMessage, { minLength: 1, maxLength: 8 }),
      (filter, messages) => {
        const compiledFilter = compiled(filter);
        for (const each of messages) {
          const expected = holds(filter, each);
          expect(compiledFilter.matches(each)).toBe(expected);
          outcomes[`${expected}`]++;
        }
      },
    ),
    { numRuns: 2000 },
  );
  // A property that only ever saw "no match" would prove little.
  const seen = outcomes.true + outcomes.false;
  expect(outcomes.true / seen).toBeGreaterThan(0.1);
  expect(outcomes.false / seen).toBeGreaterThan(0.1);
});
