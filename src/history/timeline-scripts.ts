/**
 * The Lua scripts that write a delivery's timeline (delivery-timeline.ts): each reads the
 * timeline's JSON with Redis's cjson, changes it and writes it back, atomically, whichever process
 * runs it. A timeline unreadable (written by hand, cut) is started afresh rather than refused: a
 * step must never fail the delivery it is about.
 *
 * The timeline is positional, to stay small: [event, id, received (ms), state, attempts,
 * duplicates, forwards, steps], where forwards is [[destination, "<state code><attempts>"], …]
 * and steps is flat: ms after received, step code, detail, ms, code, detail, … A destination's
 * step names it by its index in forwards.
 */

/** Steps a timeline keeps: the first and the latest. */
export const MAX_STEPS = 24;
/** Re-sends listed one by one; past this they are only counted. */
export const LISTED_DUPLICATES = 3;

/** Appends a step, keeping the first and the latest MAX_STEPS - 1. */
const APPEND = `
local function append(rec, at, code, detail)
  local t = rec[8]
  if type(t) ~= 'table' then t = {} end
  t[#t + 1] = at - rec[3]
  t[#t + 1] = code
  t[#t + 1] = detail
  if #t > ${MAX_STEPS * 3} then
    table.remove(t, 4)
    table.remove(t, 4)
    table.remove(t, 4)
  end
  rec[8] = t
end
-- cjson writes '/' as '\\/': a destination's URL-like name would pay a byte for each.
local function encoded(rec)
  return (string.gsub(cjson.encode(rec), '\\\\/', '/'))
end
local function decoded(raw)
  if not raw then return nil end
  local ok, rec = pcall(cjson.decode, raw)
  if ok and type(rec) == 'table' and type(rec[3]) == 'number' then return rec end
  return nil
end`;

/**
 * The receiver's part, in the MULTI of the enqueue, after the dedupe mark (so it costs no round
 * trip): the mark names this job (a new delivery: its timeline starts, or goes on after its dedupe
 * mark lapsed) or another (a re-send: counted). KEYS: mark, timeline, all, failed. ARGV: job id,
 * now (ms), event, id, detail, ttl (ms), member.
 */
export const RECEIVED = `${APPEND}
local now = tonumber(ARGV[2])
local rec = decoded(redis.call('GET', KEYS[2]))
if redis.call('GET', KEYS[1]) == ARGV[1] then
  if not rec then rec = {ARGV[3], ARGV[4], now, 'q', 0, 0, {}, {}} end
  rec[4] = 'q'
  append(rec, now, 'R', ARGV[5])
  redis.call('SET', KEYS[2], encoded(rec), 'PX', ARGV[6])
  redis.call('ZADD', KEYS[3], rec[3], ARGV[7])
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - tonumber(ARGV[6]))
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now - tonumber(ARGV[6]))
  return 1
end
if not rec then return 0 end
rec[6] = (tonumber(rec[6]) or 0) + 1
if rec[6] <= ${LISTED_DUPLICATES} then append(rec, now, 'D', ARGV[5]) end
redis.call('SET', KEYS[2], encoded(rec), 'PX', ARGV[6])
return 2`;

/**
 * Any later step. KEYS: timeline, all, failed, and a job key whose `data` to set (with no job to
 * write, a key of the timeline's slot stands in: every key of a script on a Cluster shares one).
 * ARGV: now, step code ('' none), detail, failed index ('+' add, '-' remove, '' leave), ttl,
 * member, then what a missing timeline is started with (event, id, received), state ('' leave),
 * attempts ('' leave, else the number), destination ('' none) and its "<code><attempts>", the
 * job's new data ('' leave), a field of the job's to delete with it ('' none), then any steps noted
 * earlier and written with this one: at (ms), code, detail, … oldest first, appended before it.
 */
export const STEP = `${APPEND}
local now = tonumber(ARGV[1])
local rec = decoded(redis.call('GET', KEYS[1]))
if not rec then
  rec = {ARGV[7], ARGV[8], tonumber(ARGV[9]), 'q', 0, 0, {}, {}}
  redis.call('ZADD', KEYS[2], rec[3], ARGV[6])
end
if ARGV[10] ~= '' then rec[4] = ARGV[10] end
if ARGV[11] ~= '' then rec[5] = tonumber(ARGV[11]) end
local detail = ARGV[3]
if ARGV[12] ~= '' then
  local f = rec[7]
  if type(f) ~= 'table' then f = {} end
  local at = #f + 1
  for i, pair in ipairs(f) do if pair[1] == ARGV[12] then at = i end end
  f[at] = {ARGV[12], ARGV[13]}
  rec[7] = f
  detail = tostring(at - 1) .. ' ' .. detail
end
for i = 16, #ARGV - 2, 3 do append(rec, tonumber(ARGV[i]), ARGV[i + 1], ARGV[i + 2]) end
if ARGV[2] ~= '' then append(rec, now, ARGV[2], detail) end
redis.call('SET', KEYS[1], encoded(rec), 'PX', ARGV[5])
if ARGV[4] == '+' then redis.call('ZADD', KEYS[3], rec[3], ARGV[6])
elseif ARGV[4] == '-' then redis.call('ZREM', KEYS[3], ARGV[6]) end
if ARGV[14] ~= '' and redis.call('EXISTS', KEYS[4]) == 1 then
  redis.call('HSET', KEYS[4], 'data', ARGV[14])
  if ARGV[15] ~= '' then redis.call('HDEL', KEYS[4], ARGV[15]) end
end
return 1`;
