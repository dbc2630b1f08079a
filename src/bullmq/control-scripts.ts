/**
 * The Lua scripts of a run's durable control (docs/scale-out.md, "Control is state"): a command is recorded in
 * the run's control hash before anything is published; the worker takes each record once (by command id) and
 * stores its answer beside it. Keys: `<run>:ctl` (pending: command id → `n\n<signed request JSON>`, `n` the
 * order recorded), `<run>:ctl:done` (taken: command id → the record), `<run>:ctl:ans` (answers: command id →
 * the signed answer JSON). All three expire with the run (the terminal script).
 */

const PREFIX = `
local ns = ARGV[1]
local function runKey(id) return ns .. ':run:' .. id end
`;

/**
 * record: ARGV ns, runId, cid, json (the signed request). A run that ended or does not exist → {'ended'}; a
 * command id taken before → {'applied'}. Else the record is stored (pending) and, when a worker runs the run, a
 * wake-up `{"wake":runId}` is published on its channel, in the same step → {'recorded', state, owner}.
 */
export const RECORD = `${PREFIX}
local runId, cid, json = ARGV[2], ARGV[3], ARGV[4]
local rkey = runKey(runId)
if redis.call('EXISTS', rkey) == 0 or redis.call('HEXISTS', rkey, 'terminal') == 1 then return { 'ended' } end
if redis.call('HEXISTS', rkey .. ':ctl:done', cid) == 1 then return { 'applied' } end
local n = redis.call('HINCRBY', rkey, 'ctlSeq', 1)
redis.call('HSET', rkey .. ':ctl', cid, n .. '\\n' .. json)
local state = redis.call('HGET', rkey, 'state') or ''
local owner = redis.call('HGET', rkey, 'owner') or ''
if state == 'running' and owner ~= '' then
  redis.call('PUBLISH', ns .. ':w:' .. owner, cjson.encode({ wake = runId }))
end
return { 'recorded', state, owner }
`;

/** pending: ARGV ns, then run ids. Every pending record of those runs → {runId, cid, value, runId, cid, value…}. */
export const PENDING = `${PREFIX}
local out = {}
for i = 2, #ARGV do
  local flat = redis.call('HGETALL', runKey(ARGV[i]) .. ':ctl')
  for j = 1, #flat, 2 do
    table.insert(out, ARGV[i])
    table.insert(out, flat[j])
    table.insert(out, flat[j + 1])
  end
end
return out
`;

/**
 * take: ARGV ns, runId, cid, how (`apply` or `drop`). Removes the pending record → {1}, or {0} when it is not
 * pending (another read took it). `apply` also marks the command id taken; one taken before → {-1} (a replay:
 * the record was written again), nothing marked. `drop` (a refused or misrouted record) marks nothing, so the
 * same command may be recorded again (routed to where the run is now).
 */
export const TAKE = `${PREFIX}
local runId, cid, how = ARGV[2], ARGV[3], ARGV[4]
local rkey = runKey(runId)
local value = redis.call('HGET', rkey .. ':ctl', cid)
if not value then return { 0 } end
redis.call('HDEL', rkey .. ':ctl', cid)
if how == 'drop' then return { 1 } end
if redis.call('HSETNX', rkey .. ':ctl:done', cid, value) == 0 then return { -1 } end
return { 1 }
`;
