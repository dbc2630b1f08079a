import type { Redis } from 'ioredis';
import { PENDING, RECORD, TAKE } from './control-scripts.js';

/**
 * The Lua scripts of `loopctl/bullmq`: each state change of a run or a thread is one script, so it is atomic
 * across processes. They build their keys from the namespace (ARGV[1], see ./keys.ts), so they need one
 * Redis node. Every script answers an array whose first element says what happened.
 */

const HELPERS = `
local ns = ARGV[1]
local function runKey(id) return ns .. ':run:' .. id end
local function threadKey(t) return ns .. ':thread:' .. t end
local function lastSeq(id)
  local last = redis.call('XREVRANGE', runKey(id) .. ':events', '+', '-', 'COUNT', 1)
  if #last == 0 then return -1 end
  return tonumber(string.match(last[1][1], '^(%d+)'))
end
local function frontPush(list, items)
  for i = #items, 1, -1 do redis.call('LPUSH', list, items[i]) end
end
local function mailboxItems(id)
  local flat = redis.call('HGETALL', runKey(id) .. ':mbox')
  local entries = {}
  for i = 2, #flat, 2 do
    local item = cjson.decode(flat[i])
    table.insert(entries, { n = item.n, json = cjson.encode({ id = item.id, content = item.content, mac = item.mac }) })
  end
  table.sort(entries, function(a, b) return a.n < b.n end)
  local out = {}
  for _, e in ipairs(entries) do table.insert(out, e.json) end
  return out
end
local function currentClaim(id, token)
  if token == nil or token == '' then return true end
  return redis.call('HGET', runKey(id), 'state') == 'running' and redis.call('HGET', runKey(id), 'claim') == token
end
`;

/**
 * admit: ARGV ns, runId, threadKey, ifBusy, then the run hash's fields as name/value pairs.
 * The thread free (no live run, or one that ended): the run is created `queued` and owns the thread → {'start'}.
 * Busy: with ifBusy enqueue (at the back) or interrupt / rollback (at the front) the run is created `pending`
 * behind the live one → {'pending', live, state, owner}; otherwise nothing is created → {'busy', live, state, owner}.
 */
const ADMIT = `${HELPERS}
local runId, thread, ifBusy = ARGV[2], ARGV[3], ARGV[4]
local tkey = threadKey(thread)
local live = redis.call('HGET', tkey, 'live')
local state = false
local owner = ''
if live then
  state = redis.call('HGET', runKey(live), 'state')
  owner = redis.call('HGET', runKey(live), 'owner') or ''
end
local fields = {}
for i = 5, #ARGV do table.insert(fields, ARGV[i]) end
if (not live) or (not state) or state == 'ended' then
  redis.call('HSET', runKey(runId), unpack(fields))
  redis.call('HSET', runKey(runId), 'state', 'queued')
  redis.call('HSET', tkey, 'live', runId)
  return { 'start' }
end
if ifBusy == 'enqueue' or ifBusy == 'interrupt' or ifBusy == 'rollback' then
  redis.call('HSET', runKey(runId), unpack(fields))
  redis.call('HSET', runKey(runId), 'state', 'pending')
  if ifBusy == 'enqueue' then redis.call('RPUSH', tkey .. ':pending', runId)
  else redis.call('LPUSH', tkey .. ':pending', runId) end
  return { 'pending', live, state, owner }
end
return { 'busy', live, state, owner }
`;

/**
 * claim: ARGV ns, runId, workerId, thread (the job's signed session id). A run whose hash names another thread
 * → {'mismatch', thread} (nothing changes: a job touches only the thread it names). A `queued` run becomes
 * `running`, owned by the worker, with the next claim token (the run's `claim` counter: 1, 2 after a rerun…), and
 * the thread's steering moves into its mailbox hash (n = 1, 2, … in queue order) → {'claimed', token, items…};
 * a running run → {'owned', owner}; anything else (ended, pending, unknown) →
 * {'ended'}.
 */
const CLAIM = `${HELPERS}
local runId, worker, expected = ARGV[2], ARGV[3], ARGV[4]
local rkey = runKey(runId)
local named = redis.call('HGET', rkey, 'thread')
if named and named ~= expected then return { 'mismatch', named } end
local state = redis.call('HGET', rkey, 'state')
if state == 'running' then return { 'owned', redis.call('HGET', rkey, 'owner') or '' } end
if state ~= 'queued' then return { 'ended' } end
redis.call('HSET', rkey, 'state', 'running', 'owner', worker)
local token = redis.call('HINCRBY', rkey, 'claim', 1)
local thread = redis.call('HGET', rkey, 'thread')
local list = threadKey(thread) .. ':steer'
local items = redis.call('LRANGE', list, 0, -1)
redis.call('DEL', list)
local out = { 'claimed', tostring(token) }
for i, json in ipairs(items) do
  local item = cjson.decode(json)
  local entry = { id = item.id, content = item.content, mac = item.mac, n = i, held = 0 }
  redis.call('HSET', rkey .. ':mbox', item.id, cjson.encode(entry))
  table.insert(out, json)
end
return out
`;

/**
 * append: ARGV ns, runId, seq, json, token (the writer's claim token; '' for none). Adds a non-terminal event to
 * the run's stream and publishes it → {1}; not when the run's hash is gone (Redis lost it: a restart that kept
 * nothing, a flush) → {-4}, when the run has its terminal already → {-1}, when the token is not the run's current
 * claim (it was declared lost, or rerun) → {-3}, or an event with this seq or a later one is stored (a resent
 * command) → {0}.
 */
const APPEND = `${HELPERS}
local runId, seq, json = ARGV[2], tonumber(ARGV[3]), ARGV[4]
if redis.call('EXISTS', runKey(runId)) == 0 then return { -4 } end
if redis.call('HEXISTS', runKey(runId), 'terminal') == 1 then return { -1 } end
if not currentClaim(runId, ARGV[5]) then return { -3 } end
if seq <= lastSeq(runId) then return { 0 } end
redis.call('XADD', runKey(runId) .. ':events', seq .. '-1', 'e', json)
redis.call('PUBLISH', ns .. ':ev:' .. runId, seq .. '\\n' .. json)
return { 1 }
`;

/**
 * terminal: ARGV ns, runId, seq ('' for the next after the last stored), json, expect (a '|'-list of states the
 * run must be in, '' for any), expectOwner ('' for any; `<worker>` or `<worker>#<claim token>`: the run's
 * owner, and its current claim), retainMs, giveBackMailbox ('1': the mailbox hash's items go back to the
 * thread's steering, front), startedJson ('' or a run_started stored first at seq 0), then the
 * steering to put back at the front of the thread's queue (JSON items).
 * Refuses a second terminal for a run → {-1}; a run in another state / of another owner → {-2, state, owner}.
 * A run whose hash is gone (Redis lost its keys) with an expectOwner (its worker's own terminal): the terminal is
 * stored alone (stream entry, and a hash that says `ended`, `orphan` 1), so every reader polling finds it →
 * {seq, '', ''}; the steering to put back is lost with the thread's keys.
 * Else stores it, marks the run ended, expires its keys after retainMs, frees the thread (the next pending
 * run becomes queued and owns it) and publishes → {seq, nextRunId or '', nextJob or ''}.
 */
const TERMINAL = `${HELPERS}
local runId, seqArg, json, expect, expectOwner = ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local retainMs, giveBack, started = tonumber(ARGV[7]), ARGV[8], ARGV[9]
local rkey = runKey(runId)
if redis.call('HEXISTS', rkey, 'terminal') == 1 then return { -1 } end
if expectOwner ~= '' and redis.call('EXISTS', rkey) == 0 then
  local ekey = rkey .. ':events'
  local seq = math.max(tonumber(seqArg) or 0, lastSeq(runId) + 1)
  redis.call('XADD', ekey, seq .. '-1', 'e', json)
  redis.call('HSET', rkey, 'state', 'ended', 'terminal', cjson.decode(json).type, 'lastSeq', seq, 'orphan', 1)
  redis.call('PEXPIRE', rkey, retainMs)
  redis.call('PEXPIRE', ekey, retainMs)
  redis.call('PUBLISH', ns .. ':ev:' .. runId, seq .. '\\n' .. json)
  return { seq, '', '' }
end
local state = redis.call('HGET', rkey, 'state') or ''
local owner = redis.call('HGET', rkey, 'owner') or ''
if expect ~= '' and not string.find('|' .. expect .. '|', '|' .. state .. '|', 1, true) then
  return { -2, state, owner }
end
local claim = redis.call('HGET', rkey, 'claim') or ''
if expectOwner ~= '' and owner ~= expectOwner and owner .. '#' .. claim ~= expectOwner then
  return { -2, state, owner }
end
local ekey = rkey .. ':events'
if started ~= '' and lastSeq(runId) < 0 then
  redis.call('XADD', ekey, '0-1', 'e', started)
  redis.call('PUBLISH', ns .. ':ev:' .. runId, '0\\n' .. started)
end
local last = lastSeq(runId)
local seq = tonumber(seqArg)
if seq == nil or seq <= last then seq = last + 1 end
redis.call('XADD', ekey, seq .. '-1', 'e', json)
local thread = redis.call('HGET', rkey, 'thread')
local back = {}
if giveBack == '1' then back = mailboxItems(runId) end
for i = 10, #ARGV do table.insert(back, ARGV[i]) end
if thread then
  frontPush(threadKey(thread) .. ':steer', back)
  redis.call('LREM', threadKey(thread) .. ':pending', 0, runId)
end
redis.call('DEL', rkey .. ':mbox')
redis.call('HSET', rkey, 'state', 'ended', 'terminal', cjson.decode(json).type, 'lastSeq', seq)
redis.call('PEXPIRE', rkey, retainMs)
redis.call('PEXPIRE', ekey, retainMs)
for _, k in ipairs({ ':ctl', ':ctl:done', ':ctl:ans' }) do redis.call('PEXPIRE', rkey .. k, retainMs) end
redis.call('PUBLISH', ns .. ':ev:' .. runId, seq .. '\\n' .. json)
local nextRun, nextJob = '', ''
if thread and redis.call('HGET', threadKey(thread), 'live') == runId then
  local n = redis.call('LPOP', threadKey(thread) .. ':pending')
  if n then
    redis.call('HSET', threadKey(thread), 'live', n)
    redis.call('HSET', runKey(n), 'state', 'queued')
    nextRun = n
    nextJob = redis.call('HGET', runKey(n), 'job') or ''
  else
    redis.call('HDEL', threadKey(thread), 'live')
  end
end
return { seq, nextRun, nextJob }
`;

/**
 * requeue: ARGV ns, runId, deadOwner. A running run of a lost worker goes back to `queued` for a rerun
 * (`onWorkerLost: 'retry_once'`): its mailbox's items go back to the front of the thread's steering, its
 * `retries` count grows → {1, lastSeq}; a run in another state or of another owner → {0}.
 */
const REQUEUE = `${HELPERS}
local runId, dead = ARGV[2], ARGV[3]
local rkey = runKey(runId)
if redis.call('HGET', rkey, 'state') ~= 'running' or redis.call('HGET', rkey, 'owner') ~= dead then return { 0 } end
local thread = redis.call('HGET', rkey, 'thread')
frontPush(threadKey(thread) .. ':steer', mailboxItems(runId))
redis.call('DEL', rkey .. ':mbox')
redis.call('HSET', rkey, 'state', 'queued', 'owner', '')
redis.call('HINCRBY', rkey, 'retries', 1)
return { 1, lastSeq(runId) }
`;

/**
 * mailbox: ARGV ns, runId, token, op ('set' then id/json pairs, or 'del' then ids). The mirror of a run's
 * in-memory mailbox (./mirrored-mailbox.ts), written only while `token` is the run's current claim → {1};
 * a worker declared lost (or whose run was rerun) writes nothing → {0}.
 */
const MAILBOX = `${HELPERS}
local runId, token, op = ARGV[2], ARGV[3], ARGV[4]
if not currentClaim(runId, token) then return { 0 } end
local key = runKey(runId) .. ':mbox'
if op == 'set' then
  for i = 5, #ARGV, 2 do redis.call('HSET', key, ARGV[i], ARGV[i + 1]) end
else
  for i = 5, #ARGV do redis.call('HDEL', key, ARGV[i]) end
end
return { 1 }
`;

/**
 * steerQueued: ARGV ns, runId, then JSON items. A run that no worker runs yet (pending, queued): the items go
 * to the back of the thread's steering → {'queued'}; a running run → {'live', owner}; an ended one → {'ended'}.
 */
const STEER_QUEUED = `${HELPERS}
local runId = ARGV[2]
local rkey = runKey(runId)
local state = redis.call('HGET', rkey, 'state')
if state == 'running' then return { 'live', redis.call('HGET', rkey, 'owner') or '' } end
if state ~= 'queued' and state ~= 'pending' then return { 'ended' } end
local list = threadKey(redis.call('HGET', rkey, 'thread')) .. ':steer'
for i = 3, #ARGV do redis.call('RPUSH', list, ARGV[i]) end
return { 'queued' }
`;

/**
 * withdrawQueued: ARGV ns, runId, steeringId. Unless a worker runs the run ({'live', owner}), removes the
 * steering with that id from the thread's queue → {'removed'} or {'absent'}.
 */
const WITHDRAW_QUEUED = `${HELPERS}
local runId, id = ARGV[2], ARGV[3]
local rkey = runKey(runId)
local state = redis.call('HGET', rkey, 'state')
if state == 'running' then return { 'live', redis.call('HGET', rkey, 'owner') or '' } end
local thread = redis.call('HGET', rkey, 'thread')
if not thread then return { 'absent' } end
local list = threadKey(thread) .. ':steer'
for _, json in ipairs(redis.call('LRANGE', list, 0, -1)) do
  if cjson.decode(json).id == id then
    redis.call('LREM', list, 1, json)
    return { 'removed' }
  end
end
return { 'absent' }
`;

/**
 * compact: ARGV ns, runId, then seq/json pairs in seq order. Rewrites a finished run's stream with these events
 * (consecutive text deltas of one model attempt as one, `fromSeq` and `offsets`), keeping its expiry: the
 * trimming at the terminal (docs/scale-out.md, "Trimming and expiry"). Only for a run whose terminal is stored
 * and whose last entry is the last pair's seq → {1}; else {0}.
 */
const COMPACT = `${HELPERS}
local runId = ARGV[2]
local rkey = runKey(runId)
if redis.call('HEXISTS', rkey, 'terminal') == 0 then return { 0 } end
if tostring(lastSeq(runId)) ~= ARGV[#ARGV - 1] then return { 0 } end
local ekey = rkey .. ':events'
local ttl = redis.call('PTTL', ekey)
redis.call('DEL', ekey)
for i = 3, #ARGV, 2 do redis.call('XADD', ekey, ARGV[i] .. '-1', 'e', ARGV[i + 1]) end
if ttl > 0 then redis.call('PEXPIRE', ekey, ttl) end
return { 1 }
`;

/** The scripts as commands of a client (ioredis `defineCommand`: EVALSHA, EVAL after a NOSCRIPT). */
export interface ScriptCommands {
  lcAdmit(...args: string[]): Promise<string[]>;
  lcClaim(...args: string[]): Promise<string[]>;
  lcAppend(...args: string[]): Promise<number[]>;
  lcTerminal(...args: string[]): Promise<(number | string)[]>;
  lcRequeue(...args: string[]): Promise<number[]>;
  lcSteerQueued(...args: string[]): Promise<string[]>;
  lcWithdrawQueued(...args: string[]): Promise<string[]>;
  lcCompact(...args: string[]): Promise<number[]>;
  lcMailbox(...args: string[]): Promise<number[]>;
  lcRecord(...args: string[]): Promise<string[]>;
  lcPending(...args: string[]): Promise<string[]>;
  lcTake(...args: string[]): Promise<number[]>;
}

/** A client with the scripts defined. */
export type ScriptedRedis = Redis & ScriptCommands;

/** Defines the scripts on `redis` (once per client) and returns it typed with them. */
export function withScripts(redis: Redis): ScriptedRedis {
  const scripts: Record<keyof ScriptCommands, string> = {
    lcAdmit: ADMIT,
    lcClaim: CLAIM,
    lcAppend: APPEND,
    lcTerminal: TERMINAL,
    lcRequeue: REQUEUE,
    lcSteerQueued: STEER_QUEUED,
    lcWithdrawQueued: WITHDRAW_QUEUED,
    lcCompact: COMPACT,
    lcMailbox: MAILBOX,
    lcRecord: RECORD,
    lcPending: PENDING,
    lcTake: TAKE,
  };
  for (const [name, lua] of Object.entries(scripts)) redis.defineCommand(name, { numberOfKeys: 0, lua });
  return redis as ScriptedRedis;
}
