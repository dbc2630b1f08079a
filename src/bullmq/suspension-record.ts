import type { Redis } from 'ioredis';
import { ResumeError } from '../errors.js';
import type { QueueAuth } from './auth.js';
import type { Keys } from './keys.js';

/**
 * A queued run's suspension as the queue keeps it (docs/scale-out.md, "Approvals across processes"): the run
 * that suspended, its agent and its `run_completed.suspended`, in the thread's suspension hash (field
 * `record`), signed with the queue secret for the thread it belongs to.
 */
export interface SuspensionRecord {
  readonly runId: string;
  readonly agent: string;
  readonly suspended: unknown;
}

/** What a record's tag covers: the thread (session id) it belongs to, and the record. */
const recordParts = (threadKey: string, record: SuspensionRecord) => ['suspension', threadKey, record];

/** The purpose the queue secret is derived for to seal queued runs' suspensions (`QueueAuth.derive`). */
export const SUSPENSION_KEY_PURPOSE = 'suspension seal';

/**
 * storeSuspension: KEYS thread hash, thread's pending list, suspension hash; ARGV runId, record JSON, retainMs.
 * Kept only while the run is the thread's live one and no run waits behind it (one that waits starts on the
 * thread next, which makes the suspension stale) → 1; else nothing → 0. Replaces the hash (no `by`).
 */
const STORE = `
if redis.call('HGET', KEYS[1], 'live') ~= ARGV[1] then return 0 end
if redis.call('LLEN', KEYS[2]) > 0 then return 0 end
redis.call('DEL', KEYS[3])
redis.call('HSET', KEYS[3], 'record', ARGV[2])
redis.call('PEXPIRE', KEYS[3], tonumber(ARGV[3]))
return 1
`;

/** Keeps run `record.runId`'s suspension as thread `threadKey`'s (see {@link STORE}); true when kept. */
export async function storeSuspension(
  redis: Redis,
  keys: Keys,
  auth: QueueAuth,
  threadKey: string,
  record: SuspensionRecord,
  retainMs: number,
): Promise<boolean> {
  const mac = auth.sign(recordParts(threadKey, record));
  const json = JSON.stringify(mac ? { ...record, mac } : record);
  const k = [keys.thread(threadKey), keys.pending(threadKey), keys.suspension(threadKey)];
  return (await redis.eval(STORE, 3, ...k, record.runId, json, String(retainMs))) === 1;
}

/** A thread's kept suspension and the run that resumed it last (`by`, `''` for none). */
export interface KeptSuspension {
  readonly record: SuspensionRecord;
  readonly by: string;
}

/**
 * Thread `threadKey`'s kept suspension, its tag checked; `undefined` when it has none.
 * @throws {ResumeError} `unsigned` (no tag) or `tampered` (a tag that does not match: changed in Redis, or
 * another thread's record copied here).
 */
export async function readSuspension(
  redis: Redis,
  keys: Keys,
  auth: QueueAuth,
  threadKey: string,
): Promise<KeptSuspension | undefined> {
  const [json, by] = await redis.hmget(keys.suspension(threadKey), 'record', 'by');
  if (json === null) return undefined;
  let value: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(json);
    value = parsed !== null && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : {};
  } catch {
    value = {};
  }
  const { mac, ...rest } = value;
  const record = rest as unknown as SuspensionRecord;
  const refused = auth.verify(recordParts(threadKey, record), mac);
  if (refused === 'unsigned') throw new ResumeError('unsigned', 'the queued suspension is not signed');
  if (refused !== undefined) {
    throw new ResumeError('tampered', 'the queued suspension does not match its tag under the queue secret');
  }
  if (typeof record.runId !== 'string' || typeof record.agent !== 'string') {
    throw new ResumeError('tampered', 'the queued suspension names no run or agent');
  }
  return { record, by: by ?? '' };
}
