import { ResumeError } from '../errors.js';
import type { Item, ToolCall } from '../items.js';
import { base64url, hmacSha256 } from './hmac.js';

/**
 * The secret a suspension is signed with (`RunOptions.suspensionKey`, docs/run-control.md, "Integrity"):
 * a string or bytes of at least 32 bytes. Give the same key to the run that suspends and to `resume`.
 */
export type SuspensionKey = string | Uint8Array;

/** The least key length in bytes (HMAC-SHA256's block-size guidance: at least its output, 32 bytes). */
export const MIN_SUSPENSION_KEY_BYTES = 32;

/**
 * What each call of the open batch without a result was when the run suspended: `pending` (awaited a
 * decision), `decided` (decided before the suspension, its decision in `decisions`), `free` (needed no
 * approval; its `beforeToolCall` hooks allowed it).
 */
export type SealedStatus = 'pending' | 'decided' | 'free';

/**
 * A suspension's seal (`Suspended.seal`): HMAC-SHA256 tags, base64url. `key` names the key (a tag over
 * a fixed text: it tells a suspension sealed with another key, and reveals nothing of it); `agent`
 * over the suspension id and agent name; `calls[callId]` over each unanswered call's id, name,
 * arguments and `status`; `mac` over the whole suspension but `seal.mac` (canonical JSON: keys sorted).
 */
export interface Seal {
  readonly alg: 'HMAC-SHA256';
  readonly key: string;
  readonly agent: string;
  readonly calls: Readonly<Record<string, { readonly status: SealedStatus; readonly mac: string }>>;
  readonly mac: string;
}

/** This process's key, used when the application gives none: its suspensions resume in this process only. */
const PROCESS_KEY = globalThis.crypto.getRandomValues(new Uint8Array(32));

const encoder = new TextEncoder();

function keyOf(key: SuspensionKey | undefined): Uint8Array {
  if (key === undefined) return PROCESS_KEY;
  return typeof key === 'string' ? encoder.encode(key) : key;
}

/** The byte length of a key (a string's UTF-8). */
export function keyBytes(key: SuspensionKey): number {
  return typeof key === 'string' ? encoder.encode(key).length : key.length;
}

/** JSON with object keys sorted (the value read as `JSON.stringify` reads it: undefined fields dropped). */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(JSON.parse(JSON.stringify(value ?? null))));
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v === null || typeof v !== 'object') return v;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v).sort()) out[k] = sortKeys((v as Record<string, unknown>)[k]);
  return out;
}

function tag(key: SuspensionKey | undefined, parts: unknown): string {
  return base64url(hmacSha256(keyOf(key), encoder.encode(canonicalJson(parts))));
}

/** Equal tags, compared in time independent of where they differ. */
function same(a: string, b: unknown): boolean {
  if (typeof b !== 'string' || a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

const callTag = (key: SuspensionKey | undefined, id: string, c: ToolCall, status: SealedStatus): string =>
  tag(key, ['call', id, c.callId, c.name, c.arguments, status]);

/** The fields of a suspension a seal covers (everything but the seal's own `mac`). */
interface Sealable {
  readonly suspensionId: string;
  readonly agent: string;
  readonly items: readonly Item[];
  readonly pending: readonly ToolCall[];
  readonly decisions: Readonly<Record<string, unknown>>;
}

/**
 * Seals `s`: `unanswered` are the open batch's calls without a result (call order), their status read
 * from `s.pending` and `s.decisions`. Returns `s` with its `seal`.
 */
export function sealSuspension<S extends Sealable>(
  s: S,
  unanswered: readonly ToolCall[],
  key: SuspensionKey | undefined,
): S & { seal: Seal } {
  const pending = new Set(s.pending.map((c) => c.callId));
  const calls: Record<string, { status: SealedStatus; mac: string }> = {};
  for (const c of unanswered) {
    const status: SealedStatus = pending.has(c.callId)
      ? 'pending'
      : Object.hasOwn(s.decisions, c.callId)
        ? 'decided'
        : 'free';
    calls[c.callId] = { status, mac: callTag(key, s.suspensionId, c, status) };
  }
  const open = {
    alg: 'HMAC-SHA256' as const,
    key: tag(key, ['loopctl suspension key']),
    agent: tag(key, ['agent', s.suspensionId, s.agent]),
    calls,
  };
  const mac = tag(key, ['suspension', { ...s, seal: open }]);
  return { ...s, seal: { ...open, mac } };
}

/** The calls of the last assistant Item of `items` that have no `tool_result` after it (call order). */
export function unansweredCalls(items: readonly Item[]): ToolCall[] {
  let at = -1;
  for (let i = items.length - 1; i >= 0; i--)
    if (items[i]!.type === 'assistant') {
      at = i;
      break;
    }
  if (at < 0) return [];
  const answered = new Set<string>();
  for (const i of items.slice(at + 1)) if (i.type === 'tool_result') answered.add(i.callId);
  const assistant = items[at] as Extract<Item, { type: 'assistant' }>;
  return (assistant.toolCalls ?? []).filter((c) => !answered.has(c.callId));
}

/**
 * Checks a suspension read back (`raw`, as given to `resume`; `s`, its parsed form) against its seal
 * and against the agent resuming it; throws {@link ResumeError}: `unsigned` (no seal), `key_mismatch` (sealed
 * with another key, or, without a key, in another process), `agent_mismatch`
 * (another agent, or its `agent` was rewritten), `call_added` (a call without a result, or a pending
 * call, that was not in the open batch's unanswered calls when it was sealed), `arguments_changed` (a
 * call's name or arguments differ from what was sealed, or a pending call's from the batch's),
 * `pending_removed` (a call that awaited a decision is no longer pending), `unknown_call` (a decision
 * in `suspended.decisions` for a call that was not decided before the suspension), `tampered` (anything
 * else changed: `items`, `usage`, `turn`, a decision's value, the seal).
 */
export function verifySuspension(
  raw: unknown,
  s: Sealable & { readonly seal?: Seal | undefined },
  agentName: string,
  key: SuspensionKey | undefined,
): void {
  const seal = s.seal;
  if (seal === undefined) throw new ResumeError('unsigned', 'the suspension has no seal (made by an older loopctl?)');
  if (!same(tag(key, ['loopctl suspension key']), seal.key)) {
    const why = key === undefined ? 'give resume the suspensionKey it was made with' : 'it was made with another key';
    throw new ResumeError('key_mismatch', `the suspension was not sealed with this key: ${why}`);
  }
  if (!same(tag(key, ['agent', s.suspensionId, s.agent]), seal.agent)) {
    throw new ResumeError('agent_mismatch', `suspended.agent "${s.agent}" is not the agent that suspended`);
  }
  if (s.agent !== agentName) {
    throw new ResumeError('agent_mismatch', `the suspension is of agent "${s.agent}", not "${agentName}"`);
  }
  const unanswered = unansweredCalls(s.items);
  const byId = new Map(unanswered.map((c) => [c.callId, c] as const));
  for (const c of unanswered) {
    const sealed = seal.calls[c.callId];
    if (sealed === undefined) {
      throw new ResumeError('call_added', `call ${c.callId} (${c.name}) was not in the suspended batch`, c.callId);
    }
    if (!same(callTag(key, s.suspensionId, c, sealed.status), sealed.mac)) {
      throw new ResumeError('arguments_changed', `call ${c.callId} is not the call that was suspended`, c.callId);
    }
  }
  const pending = new Set<string>();
  for (const p of s.pending) {
    const c = byId.get(p.callId);
    if (c === undefined) throw new ResumeError('call_added', `pending call ${p.callId} is not in the batch`, p.callId);
    if (canonicalJson([p.name, p.arguments]) !== canonicalJson([c.name, c.arguments])) {
      throw new ResumeError('arguments_changed', `pending call ${p.callId} differs from the batch's`, p.callId);
    }
    pending.add(p.callId);
  }
  for (const [callId, { status }] of Object.entries(seal.calls)) {
    if (status === 'pending' && !pending.has(callId)) {
      throw new ResumeError('pending_removed', `call ${callId} awaited a decision and is not pending`, callId);
    }
  }
  for (const [callId, { status }] of Object.entries(seal.calls)) {
    if (status === 'decided' && !Object.hasOwn(s.decisions, callId)) {
      throw new ResumeError(
        'pending_removed',
        `call ${callId} was decided before the suspension; its decision is gone`,
        callId,
      );
    }
  }
  for (const callId of Object.keys(s.decisions)) {
    if (seal.calls[callId]?.status !== 'decided') {
      throw new ResumeError('unknown_call', `suspended.decisions names call ${callId}, not decided before`, callId);
    }
  }
  const { mac, ...open } = (raw as { seal: Seal }).seal;
  if (!same(tag(key, ['suspension', { ...(raw as object), seal: open }]), mac)) {
    throw new ResumeError('tampered', 'the suspension does not match its seal (changed, or sealed with another key)');
  }
}
