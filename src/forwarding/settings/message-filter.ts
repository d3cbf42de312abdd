import {
  $and,
  $eq,
  $exists,
  $gt,
  $gte,
  $in,
  $lt,
  $lte,
  $ne,
  $nin,
  $nor,
  $or,
  createEqualsOperation,
  createQueryTester,
} from 'sift';

/** What a filter is matched against: the forwarded message's fields (docs/forwarding.md). */
export interface FilterableMessage {
  readonly type: string;
  readonly id: string;
  readonly timestamp: string;
  readonly data: unknown;
  readonly stored?: unknown;
}

/** A destination's FORWARD_CONFIG filter, checked and compiled at start. */
export interface MessageFilter {
  /** The filter as written in the file (for `forward status --json` and the docs). */
  readonly source: unknown;
  matches(message: FilterableMessage): boolean;
}

/** sift's options type, which its index does not export. */
type Options = Parameters<typeof createEqualsOperation>[2];
type Query = Record<string, unknown>;
type Translated = { readonly query: Query } | { readonly problem: string };

const isScalar = (value: unknown) =>
  value === null ||
  typeof value === 'string' ||
  typeof value === 'boolean' ||
  (typeof value === 'number' && Number.isFinite(value));
const isOrdered = (value: unknown) =>
  typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value));
const isScalarList = (value: unknown) => Array.isArray(value) && value.every(isScalar);
const SCALAR = 'a string, number, boolean or null';
const LIST = 'a list of strings, numbers, booleans or nulls';

/** The operators on a field: what each takes, and the sift operator it is translated to. */
const COMPARISONS: ReadonlyMap<
  string,
  { as: string; takes: string; accepts(arg: unknown): boolean }
> = new Map([
  ['$eq', { as: '$eq', takes: SCALAR, accepts: isScalar }],
  ['$neq', { as: '$ne', takes: SCALAR, accepts: isScalar }],
  ['$gt', { as: '$gt', takes: 'a string or a number', accepts: isOrdered }],
  ['$gte', { as: '$gte', takes: 'a string or a number', accepts: isOrdered }],
  ['$lt', { as: '$lt', takes: 'a string or a number', accepts: isOrdered }],
  ['$lte', { as: '$lte', takes: 'a string or a number', accepts: isOrdered }],
  ['$in', { as: '$in', takes: LIST, accepts: isScalarList }],
  ['$nin', { as: '$nin', takes: LIST, accepts: isScalarList }],
  ['$exist', { as: '$exists', takes: 'true or false', accepts: (arg) => typeof arg === 'boolean' }],
  [
    '$startsWith',
    { as: '$startsWith', takes: 'a string', accepts: (arg) => typeof arg === 'string' },
  ],
  ['$endsWith', { as: '$endsWith', takes: 'a string', accepts: (arg) => typeof arg === 'string' }],
]);

/** `$startsWith` / `$endsWith`: true for a string value (or a list element) that passes. */
const textOperation =
  (test: (text: string, arg: string) => boolean) =>
  (arg: string, ownerQuery: unknown, options: Options) =>
    createEqualsOperation(
      (value: unknown) => typeof value === 'string' && test(value, arg),
      ownerQuery,
      options,
    );

/**
 * Everything the compiled queries may use. sift's other operators are not registered at all,
 * so `$where` (which runs a string as code), `$regex` (a pattern that can backtrack
 * catastrophically, on every message) or `$elemMatch` cannot be reached even if translate()
 * let one by.
 */
const OPERATIONS: Options['operations'] = {
  $eq,
  $ne,
  $gt,
  $gte,
  $lt,
  $lte,
  $in,
  $nin,
  $exists,
  $and,
  $or,
  $nor,
  $startsWith: textOperation((text, arg) => text.startsWith(arg)),
  $endsWith: textOperation((text, arg) => text.endsWith(arg)),
};

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Why a key cannot name a field, if it cannot. */
function badFieldName(key: string): string | undefined {
  if (key === '') return 'an empty field name';
  // sift reads `item[key]`: a name the prototype answers (constructor, toString, __proto__)
  // would match a function on every message, or reach where no filter should.
  if (key in Object.prototype || key === 'prototype')
    return `field name ${JSON.stringify(key)} is not allowed`;
  // A path is handed to sift dotted (data.voice): a dot in a name would be read as a step.
  if (key.includes('.')) return `field name ${JSON.stringify(key)} holds a dot: nest objects`;
  return undefined;
}

/**
 * A filter as written, at the field `path` (empty: the message), checked and translated to a
 * sift query over dotted paths: nested objects become `data.voice`, a plain value `$eq`,
 * `$neq` `$ne`, `$exist` `$exists`, and `$not` (at either level) `$nor` of one query. So a
 * nested object means its fields, never Mongo's equality of a whole subdocument.
 */
function translate(node: unknown, path: readonly string[]): Translated {
  const at = path.length === 0 ? 'filter' : `filter at ${path.join('.')}`;
  if (Array.isArray(node)) return { problem: `${at}: a list goes in $in or $nin` };
  if (!isObject(node)) {
    if (path.length === 0) return { problem: 'filter: must be an object of fields' };
    return translate({ $eq: node }, path);
  }
  const keys = Object.keys(node);
  const unknown = keys.find(
    (key) => key.startsWith('$') && !COMPARISONS.has(key) && !['$and', '$or', '$not'].includes(key),
  );
  if (unknown !== undefined) return { problem: `${at}: unknown operator ${unknown}` };
  const operators = keys.filter((key) => COMPARISONS.has(key));
  const fields = keys.filter((key) => !key.startsWith('$'));
  if (operators.length > 0 && fields.length > 0)
    return { problem: `${at}: mixes operators (${operators.join(', ')}) and fields` };
  if (operators.length > 0 && path.length === 0)
    return { problem: `filter: ${operators.join(', ')} needs a field, e.g. {"type": {…}}` };

  const parts: Query[] = [];
  const condition: Query = {};
  for (const operator of operators) {
    const spec = COMPARISONS.get(operator);
    if (spec === undefined) continue;
    if (!spec.accepts(node[operator])) return { problem: `${at}: ${operator} takes ${spec.takes}` };
    condition[spec.as] = node[operator];
  }
  if (operators.length > 0) parts.push({ [path.join('.')]: condition });
  for (const key of keys) {
    const value = node[key];
    if (key === '$and' || key === '$or') {
      if (!Array.isArray(value) || value.length === 0)
        return { problem: `${at}: ${key} takes a non-empty list of filters` };
      const each = value.map((item) => translate(item, path));
      const failed = each.find((item) => 'problem' in item);
      if (failed !== undefined) return failed;
      parts.push({ [key]: each.map((item) => ('query' in item ? item.query : {})) });
    } else if (key === '$not') {
      const inner = translate(value, path);
      if ('problem' in inner) return inner;
      parts.push({ $nor: [inner.query] });
    } else if (!key.startsWith('$')) {
      const bad = badFieldName(key);
      if (bad !== undefined) return { problem: `${at}: ${bad}` };
      const inner = translate(value, [...path, key]);
      if ('problem' in inner) return inner;
      parts.push(inner.query);
    }
  }
  // No condition at all ({}) holds for every message, as sift's empty query does: all of none.
  const [first] = parts;
  return { query: parts.length > 1 ? { $and: parts } : (first ?? {}) };
}

/**
 * Checks a FORWARD_CONFIG filter and compiles it, or says what is wrong and where (`filter at
 * data.voice: unknown operator $regex`). The matching is sift's, a small, widely used
 * implementation of Mongo's query semantics (lists match by any element, `null` matches a
 * missing field, `$gt` compares only values of one type): edge cases a hand-written matcher
 * would get wrong one by one. It is restricted to the operators the contract names, validated
 * here first, because a filter is configuration, not code.
 */
export function compileFilter(raw: unknown): MessageFilter | { problem: string } {
  const translated = translate(raw, []);
  if ('problem' in translated) return translated;
  const test = createQueryTester<FilterableMessage, unknown>(translated.query, {
    operations: OPERATIONS,
  });
  return { source: raw, matches: (message) => test(message) };
}
