/**
 * The Lua scripts behind a destination's shared state (destination-control.ts), each atomic on
 * one destination's keys, all timed by Redis's own clock. KEYS, in every script that takes them:
 * 1 the state hash (`paused`: '' | 'failing' | 'operator', `since`, `fails` in a row), 2 the held
 * set (forward job ids, scored by when each was first held), 3 the probe lock (the id of the job
 * allowed to try a paused destination), 4 the Retry-After pause (the limiter's pause key).
 */

const NOW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/**
 * Each process's tick (ARGV[3] '1'), or a read alone ('0', the CLI's). Reads the state; an
 * active destination that is not asked to wait gives
 * up to ARGV[1] held jobs to promote (popped, so two processes never promote the same ones); a
 * destination paused for failing, with jobs held and no probe in the last ARGV[2] ms, names its
 * oldest held job as the probe. Answer: paused, fails, since, held count, oldest held's score,
 * the Retry-After pause left (ms), the probe's job id or '', the ids to promote.
 */
export const TICK = `${NOW}
local s = redis.call('HMGET', KEYS[1], 'paused', 'fails', 'since')
local paused = s[1] or ''
local held = redis.call('ZCARD', KEYS[2])
local oldest = ''
if held > 0 then oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')[2] end
local wait = redis.call('PTTL', KEYS[4])
local probe = ''
local promote = {}
if ARGV[3] ~= '1' then
elseif paused == '' and held > 0 and wait <= 0 then
  local popped = redis.call('ZPOPMIN', KEYS[2], tonumber(ARGV[1]))
  for i = 1, #popped, 2 do promote[#promote + 1] = popped[i] end
elseif paused == 'failing' and held > 0 then
  local first = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
  if redis.call('SET', KEYS[3], first, 'NX', 'PX', ARGV[2]) then probe = first end
end
return {paused, s[2] or '0', s[3] or '', held, oldest, wait, probe, promote}`;

/**
 * A job about to send to a destination its process saw paused: `send` (resumed meanwhile),
 * `probe` (this job holds the probe lock) or `hold` (its id joins the held set; a job held
 * before keeps its first score).
 */
export const DECIDE = `${NOW}
local paused = redis.call('HGET', KEYS[1], 'paused')
if not paused or paused == '' then return 'send' end
if redis.call('GET', KEYS[3]) == ARGV[1] then return 'probe' end
redis.call('ZADD', KEYS[2], 'NX', now, ARGV[1])
return 'hold'`;

/**
 * One more failure in a row; at ARGV[1] an active destination is paused. 1: paused by this,
 * 2: it was paused already (by another process, not yet read here), 0: still active.
 */
export const FAILED = `${NOW}
local fails = redis.call('HINCRBY', KEYS[1], 'fails', 1)
local paused = redis.call('HGET', KEYS[1], 'paused')
if paused and paused ~= '' then return 2 end
if fails >= tonumber(ARGV[1]) then
  redis.call('HSET', KEYS[1], 'paused', 'failing', 'since', now)
  return 1
end
return 0`;

/** A send succeeded: the run of failures ends, and a pause for failing too. 1: resumed by this. */
export const SUCCEEDED = `
redis.call('HSET', KEYS[1], 'fails', 0)
if redis.call('HGET', KEYS[1], 'paused') == 'failing' then
  redis.call('HDEL', KEYS[1], 'paused', 'since')
  redis.call('DEL', KEYS[3])
  return 1
end
return 0`;

/** An operator's pause: no probes until resumed. 1: it was not paused by an operator before. */
export const PAUSE = `${NOW}
if redis.call('HGET', KEYS[1], 'paused') == 'operator' then return 0 end
redis.call('HSET', KEYS[1], 'paused', 'operator', 'since', now)
return 1`;

/** An operator's resume, from either pause. 1: it was paused. */
export const RESUME = `
local paused = redis.call('HGET', KEYS[1], 'paused')
redis.call('HSET', KEYS[1], 'fails', 0)
redis.call('DEL', KEYS[3])
if not paused or paused == '' then return 0 end
redis.call('HDEL', KEYS[1], 'paused', 'since')
return 1`;
