import {
  childOf,
  formatTraceparent,
  newTraceContext,
  parseTraceparent,
} from '../../src/telemetry/trace-context';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';

it('reads a valid version-00 traceparent, with its flags', () => {
  expect(parseTraceparent(`00-${TRACE}-${SPAN}-01`)).toEqual({
    traceId: TRACE,
    spanId: SPAN,
    flags: '01',
  });
  expect(parseTraceparent(`00-${TRACE}-${SPAN}-00`)?.flags).toBe('00');
});

it.each([
  ['absent', undefined],
  ['repeated (two headers)', [`00-${TRACE}-${SPAN}-01`, `00-${TRACE}-${SPAN}-01`]],
  ['another version', `01-${TRACE}-${SPAN}-01`],
  ['the forbidden version ff', `ff-${TRACE}-${SPAN}-01`],
  ['an all-zero trace id', `00-${'0'.repeat(32)}-${SPAN}-01`],
  ['an all-zero parent id', `00-${TRACE}-${'0'.repeat(16)}-01`],
  ['upper-case hex', `00-${TRACE.toUpperCase()}-${SPAN}-01`],
  ['a short trace id', `00-${TRACE.slice(1)}-${SPAN}-01`],
  ['a long parent id', `00-${TRACE}-${SPAN}0-01`],
  ['no flags', `00-${TRACE}-${SPAN}`],
  ['flags of one digit', `00-${TRACE}-${SPAN}-1`],
  ['a field after the flags', `00-${TRACE}-${SPAN}-01-extra`],
  ['spaces around it', ` 00-${TRACE}-${SPAN}-01`],
  ['a trailing newline', `00-${TRACE}-${SPAN}-01\n`],
  ['non-hex', `00-${TRACE.slice(0, 31)}g-${SPAN}-01`],
])('ignores a traceparent that is %s', (_, header) => {
  expect(parseTraceparent(header)).toBeUndefined();
});

it('a new context is a valid, sampled traceparent; a child keeps the trace id under a span id of its own', () => {
  const made = newTraceContext();
  const text = formatTraceparent(made);
  expect(parseTraceparent(text)).toEqual(made);
  expect(made.flags).toBe('01');
  expect(newTraceContext().traceId).not.toBe(made.traceId);
  const child = childOf(made);
  expect(child.traceId).toBe(made.traceId);
  expect(child.spanId).not.toBe(made.spanId);
  expect(parseTraceparent(formatTraceparent(child))).toEqual(child);
});
