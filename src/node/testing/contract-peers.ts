/**
 * The cross-process parts of `sessionContract` (a second process on the same store, from `spawnPeer`):
 * one active run per session across processes, a dead holder's lease is taken at once, and `kill -9` during a
 * commit leaves the whole run or none of it.
 */
import type { Item } from '../../items.js';
import type { SessionStore } from '../../session/session.js';
import { leasing } from './contract-lease.js';
import {
  nameAndField,
  rejection,
  settle,
  sleep,
  userItems,
  withStore,
  type ContractFramework,
  type MakeStore,
} from './kit.js';
import { churnRun, type SessionPeer, type SpawnPeer } from './peer.js';

const REFUSED = { name: 'ConcurrentRunError', field: 'options.session' };

async function withPeer(store: SessionStore, spawnPeer: SpawnPeer, body: (peer: SessionPeer) => Promise<void>) {
  const peer = await spawnPeer(store);
  try {
    await body(peer);
  } finally {
    await peer.kill();
  }
}

export function peerContract({ describe, it, expect }: ContractFramework, makeStore: MakeStore, spawnPeer: SpawnPeer) {
  describe("across processes: one active run per session, and a dead holder's lease is taken at once", () => {
    it(
      'a lease held by another process refuses ours and ours refuses its; after its release ours is granted',
      () =>
        withStore(makeStore, (store) =>
          withPeer(store, spawnPeer, async (peer) => {
            const s = store.session('shared');
            expect(await peer.acquire('shared', 'peer-run', 60_000)).toEqual({ ok: true });
            expect(nameAndField(await rejection(leasing(s)('our-run', { ttlMs: 60_000 })))).toEqual(REFUSED);
            await peer.release();
            const ours = await leasing(s)('our-run', { ttlMs: 60_000 });
            const refused = await peer.acquire('shared', 'peer-run-2', 60_000);
            expect(refused.ok ? refused : nameAndField(refused.error)).toEqual(REFUSED);
            await ours.release();
          }),
        ),
      60_000,
    );

    it(
      "a resumed call's start recorded in one process is refused in the other; racing records: exactly one first",
      () =>
        withStore(makeStore, (store) =>
          withPeer(store, spawnPeer, async (peer) => {
            const s = store.session('starts');
            if (typeof s.recordCallStart !== 'function') return; // recorded in-process only: nothing to share
            const ours = (suspensionId: string, callId: string) =>
              settle(() => s.recordCallStart!(suspensionId, callId));
            expect(await peer.recordCallStart('starts', 'susp', 'call-1')).toBe(true);
            expect(await ours('susp', 'call-1')).toBe(false);
            expect(await ours('susp', 'call-2')).toBe(true);
            expect(await peer.recordCallStart('starts', 'susp', 'call-2')).toBe(false);
            const racing = await Promise.all(
              Array.from({ length: 6 }, (_, i) =>
                i % 2 === 0 ? peer.recordCallStart('starts', 'susp', 'raced') : ours('susp', 'raced'),
              ),
            );
            expect(racing.filter((first) => first).length).toBe(1);
          }),
        ),
      60_000,
    );

    it(
      'what one process appends, the other loads, in append order and exactly once per runId',
      () =>
        withStore(makeStore, (store) =>
          withPeer(store, spawnPeer, async (peer) => {
            const s = store.session('both');
            await settle(() => s.append(userItems('ours', 2), { runId: 'run-1' }));
            await peer.append('both', userItems('theirs', 3), 'run-2');
            await peer.append('both', userItems('again', 1), 'run-1'); // run-1 is stored: nothing
            const expected: Item[] = [...userItems('ours', 2), ...userItems('theirs', 3)];
            expect(await settle(() => s.load())).toEqual(expected);
            expect(await peer.load('both')).toEqual(expected);
          }),
        ),
      60_000,
    );

    it(
      'after SIGKILL of the holder, the next acquire on the same host succeeds at once, not after its ttl',
      () =>
        withStore(makeStore, (store) =>
          withPeer(store, spawnPeer, async (peer) => {
            const s = store.session('orphaned');
            const ttlMs = 60_000; // a ttl no test waits out: only "the holder process is gone" frees the lease
            expect(await peer.acquire('orphaned', 'doomed', ttlMs)).toEqual({ ok: true });
            const refused = nameAndField(await rejection(leasing(s)('ours', { ttlMs })));
            expect(refused).toEqual(REFUSED);
            await peer.kill(); // resolves once the peer process has exited
            const next = await leasing(s)('ours', { ttlMs }); // one try: no retry, no wait
            expect(next.runId).toBe('ours');
            const again = await rejection(leasing(s)('another', { ttlMs })); // the new holder is alive: refused
            expect(nameAndField(again)).toEqual(REFUSED);
            await next.release();
          }),
        ),
      60_000,
    );

    it(
      "a refusal names the holder's run and its process (pid) in words",
      () =>
        withStore(makeStore, (store) =>
          withPeer(store, spawnPeer, async (peer) => {
            const s = store.session('named');
            expect(await peer.acquire('named', 'their-run', 60_000)).toEqual({ ok: true });
            const error = (await rejection(leasing(s)('ours', { ttlMs: 60_000 }))) as Error;
            const named = /run their-run \(process (\d+) on this host\) holds the lease/.exec(error.message);
            expect(named?.[0] ?? error.message).toBe(
              `run their-run (process ${named?.[1]} on this host) holds the lease`,
            );
            await peer.release();
          }),
        ),
      60_000,
    );
  });
}

/**
 * `kill -9` during a commit, `repetitions` times: a peer appends runs of `runSize` Items back to back
 * and is killed after a random delay; the store must then hold only whole runs, in order, each once,
 * including every run the peer saw finish ("a commit is all or nothing").
 */
export function killContract(
  { describe, it, expect }: ContractFramework,
  makeStore: MakeStore,
  spawnPeer: SpawnPeer,
  options: { repetitions?: number; runSize?: number; textBytes?: number } = {},
): void {
  const { repetitions = 30, runSize = 200, textBytes = 200 } = options;
  describe('kill -9 during a commit leaves the whole run or none of it', () => {
    it(
      `${repetitions} peers killed at random moments while appending runs of ${runSize} Items`,
      () =>
        withStore(makeStore, async (store) => {
          const s = store.session('killed');
          let midCommit = 0;
          let total = 0;
          for (let rep = 0; rep < repetitions; rep++) {
            const peer = await spawnPeer(store);
            await peer.churn('killed', { from: total, runSize, textBytes });
            await sleep(Math.floor(Math.random() * 60));
            await peer.kill();
            const { begun, done } = peer.churned;
            if (begun > done) midCommit++;
            const loaded = await settle(() => s.load());
            const runs = loaded.length / runSize;
            expect({ rep, whole: Number.isInteger(runs) }).toEqual({ rep, whole: true });
            const expected = Array.from({ length: runs }, (_, r) => churnRun(r, runSize, textBytes)).flat();
            const same = loaded.length === expected.length && JSON.stringify(loaded) === JSON.stringify(expected);
            expect({ rep, same }).toEqual({ rep, same: true });
            expect({ rep, finishedRunsStored: runs > done }).toEqual({ rep, finishedRunsStored: true });
            total = runs;
          }
          // Evidence the kills landed inside commits, not only between them.
          expect(midCommit).toBeGreaterThanOrEqual(1);
          expect(total).toBeGreaterThanOrEqual(1);
        }),
      600_000,
    );
  });
}
