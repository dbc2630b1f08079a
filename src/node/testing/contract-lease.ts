/** The lease parts of `sessionContract` that one process can check ("one run per mailbox and session"). */
import { lastValueFrom } from 'rxjs';
import { toLastValue } from '../../last-value.js';
import type { Lease, LeaseOptions, Session } from '../../session/session.js';
import { nameAndField, rejection, sleep, withStore, type ContractFramework, type MakeStore } from './kit.js';

const REFUSED = { name: 'ConcurrentRunError', field: 'options.session' };
/** Long enough that no stall of a loaded machine lets a lease lapse during a test that holds it. */
const LONG_TTL_MS = 60_000;

/**
 * `s.acquire` as a function that always gives a Promise: a store may answer with a value, a Promise or
 * an Observable (`MaybeAsync`), and may throw synchronously (a rejection here).
 */
export function leasing(s: Session): (runId: string, options: LeaseOptions) => Promise<Lease> {
  if (typeof s.acquire !== 'function') throw new Error("this store's sessions have no acquire(): leases are required");
  const acquire = s.acquire.bind(s);
  return async (runId, options) => (await lastValueFrom(toLastValue(acquire(runId, options))))!;
}

/** Tries `acquire` every 25 ms until it succeeds or `capMs` passes; resolves with the lease or undefined. */
export async function acquireWithin(
  s: Session,
  runId: string,
  ttlMs: number,
  capMs: number,
): Promise<Lease | undefined> {
  const until = performance.now() + capMs;
  for (;;) {
    try {
      return await leasing(s)(runId, { ttlMs });
    } catch (err) {
      if ((err as { name?: unknown }).name !== 'ConcurrentRunError') throw err;
    }
    if (performance.now() > until) return undefined;
    await sleep(25);
  }
}

export function leaseContract({ describe, it, expect }: ContractFramework, makeStore: MakeStore): void {
  describe('leases in one process: one active run per session', () => {
    it('a second acquire is refused (ConcurrentRunError) while the first lease is held, granted after release', () =>
      withStore(makeStore, async (store) => {
        const s = store.session('lease');
        const first = await leasing(s)('run-1', { ttlMs: LONG_TTL_MS });
        expect({ runId: first.runId, ttlMs: first.ttlMs }).toEqual({ runId: 'run-1', ttlMs: LONG_TTL_MS });
        expect(nameAndField(await rejection(leasing(s)('run-2', { ttlMs: LONG_TTL_MS })))).toEqual(REFUSED);
        expect(nameAndField(await rejection(leasing(s)('run-1', { ttlMs: LONG_TTL_MS })))).toEqual(REFUSED);
        const other = await leasing(store.session('lease-other'))('run-3', { ttlMs: LONG_TTL_MS }); // another session
        await first.release();
        await first.release(); // idempotent
        const second = await leasing(store.session('lease'))('run-2', { ttlMs: LONG_TTL_MS });
        expect(second.runId).toBe('run-2');
        await second.release();
        await other.release();
      }));

    it('renew keeps a lease; renew after release, or after another run took the expired lease, is refused', () =>
      withStore(makeStore, async (store) => {
        const s = store.session('renew');
        const lease = await leasing(s)('run-1', { ttlMs: LONG_TTL_MS });
        await lease.renew();
        expect(nameAndField(await rejection(leasing(s)('run-2', { ttlMs: LONG_TTL_MS })))).toEqual(REFUSED);
        await lease.release();
        expect(nameAndField(await rejection(lease.renew()))).toEqual(REFUSED);

        const short = await leasing(s)('run-3', { ttlMs: 200 });
        const taker = await acquireWithin(s, 'run-4', LONG_TTL_MS, 10_000);
        expect(taker?.runId).toBe('run-4');
        expect(nameAndField(await rejection(short.renew()))).toEqual(REFUSED);
        await short.release(); // a lost lease's release leaves the new holder alone
        expect(nameAndField(await rejection(leasing(s)('run-5', { ttlMs: LONG_TTL_MS })))).toEqual(REFUSED);
        await taker!.release();
      }));

    it('a lease not renewed expires after ttlMs, and not before', () =>
      withStore(makeStore, async (store) => {
        const s = store.session('expiry');
        const ttlMs = 400;
        const start = performance.now();
        await leasing(s)('run-1', { ttlMs });
        const next = await acquireWithin(s, 'run-2', LONG_TTL_MS, ttlMs + 10_000);
        expect(next?.runId).toBe('run-2');
        expect(Math.ceil(performance.now() - start)).toBeGreaterThanOrEqual(ttlMs);
        await next!.release();
      }));

    it('a lease renewed every ttlMs / 3 is never lost', () =>
      withStore(makeStore, async (store) => {
        const s = store.session('kept');
        const ttlMs = 1500;
        const lease = await leasing(s)('run-1', { ttlMs });
        for (let i = 0; i < 8; i++) {
          await sleep(ttlMs / 6);
          await lease.renew();
          expect(nameAndField(await rejection(leasing(s)('run-2', { ttlMs })))).toEqual(REFUSED);
        }
        await lease.release();
      }));

    it('a bad runId or ttlMs is refused naming the field', () =>
      withStore(makeStore, async (store) => {
        const s = store.session('bad-lease');
        const fields = [];
        for (const ttlMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, '10' as unknown as number]) {
          fields.push(nameAndField(await rejection(leasing(s)('run', { ttlMs }))));
        }
        fields.push(nameAndField(await rejection(leasing(s)('', { ttlMs: 1000 }))));
        const ttl = { name: 'ConfigurationError', field: 'options.ttlMs' };
        expect(fields).toEqual([ttl, ttl, ttl, ttl, ttl, { name: 'ConfigurationError', field: 'runId' }]);
        const lease = await leasing(s)('run', { ttlMs: 1000 }); // nothing was taken by the refusals
        await lease.release();
      }));
  });
}
