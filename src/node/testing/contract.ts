import { appendContract } from './contract-append.js';
import { callStartContract } from './contract-call-start.js';
import { journalContract } from './contract-journal.js';
import { journalClaimsContract } from './contract-journal-claims.js';
import { journalResponseContract } from './contract-journal-response.js';
import { leaseContract } from './contract-lease.js';
import { killContract, peerContract } from './contract-peers.js';
import { storeContract } from './contract-store.js';
import { tamperContract, type TamperHooks } from './contract-tamper.js';
import type { ContractFramework, MakeStore } from './kit.js';
import type { SpawnPeer } from './peer.js';

/**
 * Options of {@link sessionContract}.
 * - `spawnPeer`: starts a second process on the same store (see `spawnSessionPeer`). Without it the
 *   cross-process parts are marked not applicable (`it.skip`): right for an in-process store only.
 * - `kill`: also run the `kill -9` during a commit part (`repetitions` peers, default 30; it spawns that
 *   many processes, so suites usually run it in a slower tier). Needs `spawnPeer`.
 * - `tamper`: how to remove a stored history row or change a session's stored item count (see `TamperHooks`), for
 *   the part that checks a tampered history is refused. Without it that part is marked not applicable: right for
 *   an in-process store only.
 */
export interface SessionContractOptions {
  readonly spawnPeer?: SpawnPeer;
  readonly kill?: { readonly repetitions?: number };
  readonly tamper?: TamperHooks;
}

/**
 * Registers the specs every `SessionStore` and its sessions must pass, with the test framework's own
 * `describe`, `it` and `expect` (so loopctl does not depend on one), on a fresh empty store from
 * `makeStore` per test (closed at its end):
 * - history: load gives back exactly what was appended, in append order, including hostile but valid
 *   Items (repair is the engine's job) and a 10 000-item history;
 * - append is all or nothing (a bad Item stores none of the run), idempotent per `runId`, never
 *   interleaved with a concurrent append, and all or nothing whenever its signal fires;
 * - a resumed call's start (`recordCallStart`, when the store has it) is recorded once per
 *   `(suspensionId, callId)`, racing records included, moved by rename and removed by delete;
 * - the run journal (when the store has `journalTurn`, `readJournal` and `discardJournal`): turns read
 *   back in order, a repeat of one `(runId, turn)` stores nothing, the commit seals, a discard removes,
 *   bad arguments refused, moved by rename and removed by delete; the history never sees it;
 * - a turn's response journalled before its tools (`journalResponse`, when the store has it): pending
 *   while its turn is not journalled whole, once per `(runId, turn)`, sealed by the commit, discarded;
 * - journal writes fenced per claim (`JournalOptions.claim`, `fenceJournal`, when the store has it): a claim a
 *   later one took over is refused (`JournalFencedError`) and stores nothing, the later one's writes are kept,
 *   the fence outlives a discard and moves with rename; a run's call starts go with its commit and discard;
 * - leases: one active run per session, renew and release, expiry after `ttlMs`, bad arguments;
 * - the store: list, delete, rename, close, bad ids;
 * - with `tamper`: a history with a row removed, or whose stored count was changed, is refused by `load()`
 *   (`SessionSchemaError`, `corrupt`, naming the session and the row), and no write of the store leaves a gap;
 * - with `spawnPeer`: the same across processes (leases, appends, a resumed call's start recorded once), a
 *   SIGKILLed holder's lease taken at once on its host, and with `kill`,
 *   `kill -9` during a commit leaving the whole run or none of it.
 *
 * @example
 * import { describe, it, expect } from 'vitest';
 * sessionContract({ describe, it, expect }, () => new MemorySessionStore());
 */
export function sessionContract(
  framework: ContractFramework,
  makeStore: MakeStore,
  options: SessionContractOptions = {},
): void {
  appendContract(framework, makeStore);
  callStartContract(framework, makeStore);
  journalContract(framework, makeStore);
  journalResponseContract(framework, makeStore);
  journalClaimsContract(framework, makeStore);
  leaseContract(framework, makeStore);
  storeContract(framework, makeStore);
  tamperContract(framework, makeStore, options.tamper);
  const { spawnPeer } = options;
  if (spawnPeer) {
    peerContract(framework, makeStore, spawnPeer);
    if (options.kill) killContract(framework, makeStore, spawnPeer, options.kill);
    return;
  }
  const na = framework.it.skip ?? (() => undefined);
  framework.describe('across processes (not applicable: no spawnPeer, the store lives in one process)', () => {
    na('one active run per session across processes', () => undefined);
    na("a resumed call's start recorded in one process is refused in the other", () => undefined);
    na("a dead holder's lease is taken at once", () => undefined);
    na('kill -9 during a commit leaves the whole run or none of it', () => undefined);
  });
}

/**
 * Only the `kill -9` during a commit part of {@link sessionContract} (`repetitions` peers, default 30),
 * for a suite that runs the rest in a faster tier.
 */
export function sessionKillContract(
  framework: ContractFramework,
  makeStore: MakeStore,
  spawnPeer: SpawnPeer,
  options: { readonly repetitions?: number } = {},
): void {
  killContract(framework, makeStore, spawnPeer, options);
}
