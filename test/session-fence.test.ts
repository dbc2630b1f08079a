/**
 * `Session.fenceRun` and `Session.releaseRun` (docs/scale-out.md, "Fencing"): a fence and a commit of one run
 * id are exclusive (the first wins; the answer says which, however often it is asked), a fenced run id's later
 * append stores nothing, and a lease of a run known ended is released whoever holds it. The memory store and
 * SQLite (two stores on one file stand for two processes); Postgres runs the same through the queue specs.
 */
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConcurrentRunError, MemorySessionStore, type Item } from 'loopctl';
import { SqliteSessionStore } from 'loopctl/sqlite';
import { tempDirs } from './support/session-stores.js';

const dirs = tempDirs('loopctl-fence-');
afterAll(() => dirs.removeAll());

const user = (id: string): Item => ({ type: 'user', id, text: id });

const stores = {
  memory: () => {
    const store = new MemorySessionStore();
    return [store, store] as const;
  },
  sqlite: () => {
    const file = path.join(dirs.make(), 'sessions.db');
    return [new SqliteSessionStore(file), new SqliteSessionStore(file)] as const;
  },
};

describe.each(Object.entries(stores))('fenceRun on the %s store', (_name, make) => {
  it('a fence first: the later append of that run id stores nothing; asked again, still fenced', async () => {
    const [worker, peer] = make();
    expect(await peer.session('s').fenceRun!('run-1')).toBe('fenced');
    await worker.session('s').append([user('late')], { runId: 'run-1' });
    expect(await worker.session('s').load()).toEqual([]);
    expect(await peer.session('s').fenceRun!('run-1')).toBe('fenced');
    await worker.session('s').append([user('other')], { runId: 'run-2' });
    expect(await worker.session('s').load()).toEqual([user('other')]);
  });

  it('a commit first: the fence answers committed, every time, and changes nothing', async () => {
    const [worker, peer] = make();
    await worker.session('s').append([user('a')], { runId: 'run-1' });
    expect(await peer.session('s').fenceRun!('run-1')).toBe('committed');
    expect(await peer.session('s').fenceRun!('run-1')).toBe('committed');
    expect(await peer.session('s').load()).toEqual([user('a')]);
  });

  it('a bad run id is a ConfigurationError naming runId', async () => {
    const [, peer] = make();
    await expect(async () => peer.session('s').fenceRun!('')).rejects.toMatchObject({ field: 'runId' });
  });
});

describe('releaseRun on the SQLite store', () => {
  it("ends the lease the run holds in another process: the next acquire takes it, the holder's renewal fails", async () => {
    const [holder, peer] = stores.sqlite();
    const lease = await holder.session('s').acquire('lost-run', { ttlMs: 60_000 });
    await expect(peer.session('s').acquire('next', { ttlMs: 60_000 })).rejects.toBeInstanceOf(ConcurrentRunError);
    await peer.session('s').releaseRun('other-run'); // another run's: left alone
    await expect(peer.session('s').acquire('next', { ttlMs: 60_000 })).rejects.toBeInstanceOf(ConcurrentRunError);
    await peer.session('s').releaseRun('lost-run');
    const next = await peer.session('s').acquire('next', { ttlMs: 60_000 });
    await expect(lease.renew()).rejects.toBeInstanceOf(ConcurrentRunError);
    await next.release();
  });
});
