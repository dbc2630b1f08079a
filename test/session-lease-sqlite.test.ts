/**
 * The engine's session lease on a durable store ("one run per mailbox and session", across processes):
 * two SqliteSessionStores on one file stand for two processes. A run on a session whose lease the other
 * store holds is refused (`configuration_error`, `ConcurrentRunError`) and writes nothing; once the
 * holder releases, a run takes the lease, commits, and releases it before its terminal event.
 */
import path from 'node:path';
import { lastValueFrom, toArray } from 'rxjs';
import { afterAll, describe, expect, it } from 'vitest';
import { defineAgent, run, type RunEvent } from 'loopctl';
import { SqliteSessionStore } from 'loopctl/sqlite';
import { scriptedModel, sequentialIds } from 'loopctl/testing';
import { tempDirs } from './support/session-stores.js';

const dirs = tempDirs('loopctl-lease-');
afterAll(() => dirs.removeAll());

describe('a run on a SQLite session shared by two stores (two processes)', () => {
  it('is refused while the other holds the lease; runs and releases once it is free', async () => {
    const file = path.join(dirs.make(), 'sessions.db');
    const ours = new SqliteSessionStore(file);
    const theirs = new SqliteSessionStore(file);
    const model = scriptedModel(['the answer']);
    const agent = defineAgent({ name: 'a', instructions: '', model });
    const held = await theirs.session('s').acquire('their-run', { ttlMs: 60_000 });

    const refused = await lastValueFrom(run(agent, 'q', { session: ours.session('s') }).pipe(toArray()));
    expect(refused.map((e) => e.type)).toEqual(['run_started', 'run_failed']);
    expect(refused.at(-1)).toMatchObject({
      stopReason: 'configuration_error',
      error: { name: 'ConcurrentRunError', field: 'options.session' },
    });
    expect(model.requests).toHaveLength(0);

    await held.release();
    let leaseAtTerminal = '';
    const events: RunEvent[] = [];
    await new Promise<void>((resolve) =>
      run(agent, 'q', { session: ours.session('s'), idGenerator: sequentialIds() }).subscribe({
        next: (e) => {
          events.push(e);
          if (e.type !== 'run_completed') return;
          // Released before the terminal event: the other process may take it from this handler.
          const taken = theirs.session('s').acquire('next-run', { ttlMs: 60_000 });
          leaseAtTerminal = 'asked';
          void taken.then(
            (lease) => ((leaseAtTerminal = 'taken'), lease.release()),
            () => (leaseAtTerminal = 'refused'),
          );
        },
        complete: () => resolve(),
      }),
    );
    await new Promise((r) => setImmediate(r));
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'the answer' });
    expect(leaseAtTerminal).toBe('taken');
    expect((await theirs.session('s').load()).map((i) => i.type)).toEqual(['user', 'assistant']);
    await ours.close();
    await theirs.close();
  });
});
