/**
 * "Exactly once across resumes" (docs/run-control.md): a resumed run that fails or is cancelled at any
 * checkpoint after its approved call started may be resumed again, and the call never runs twice: its
 * start was recorded (in the session, else in the process) before it ran. In memory, in SQLite, without
 * a session, and with the second resume in a fresh copy of loopctl (another process's memory).
 */
import { afterAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { MemorySession, defineAgent, resume, start, tool, type Session } from '../src/index.js';
import { lazySession } from '../src/bullmq/shared.js';
import { scriptedModel } from '../src/testing/index.js';
import { CASES, resumeTwice, type Outcome } from './support/resume-once.js';
import { sqliteStore, tempDirs } from './support/session-stores.js';

const dirs = tempDirs('loopctl-resume-once-');
afterAll(() => dirs.removeAll());

const ALREADY = 'ToolCallAlreadyStartedError';

/** The assertions every store shares; `log` started in the first resume unless it ended at the tool. */
function expectOnce(outcome: Outcome, checkpoint: string): void {
  const logRanFirst = checkpoint !== 'tool running';
  expect(outcome.executions).toEqual({ deploy: 1, log: 1 });
  expect(outcome.secondEnd).toBe('run_completed');
  // The tools were told they ran for a resume of one suspension.
  expect(outcome.resumed.map((r) => typeof r?.suspensionId)).toEqual(['string', 'string']);
  const [output, interrupted] = outcome.readBySecond['d1']!;
  expect(output).toMatch(/^Error: not run again: an earlier resume of this suspension already started this call/);
  expect(output).toContain('its effects are unknown');
  expect(interrupted).toBe(true);
  expect(outcome.readBySecond['l1']).toEqual(
    logRanFirst ? [expect.stringContaining('not run again') as unknown, true] : ['logged', undefined],
  );
  expect(outcome.secondFailures).toEqual(logRanFirst ? [`d1:${ALREADY}`, `l1:${ALREADY}`] : [`d1:${ALREADY}`]);
}

describe('an approved call runs once across resumes, whatever ended the first resume', () => {
  for (const [checkpoint, ending] of CASES) {
    it(`memory session: ${ending} at ${checkpoint}`, async () => {
      const outcome = await resumeTwice(checkpoint, ending, new MemorySession());
      expect(outcome.firstEnd).toBe(ending === 'cancel' ? 'run_cancelled' : 'run_failed');
      expectOnce(outcome, checkpoint);
    });

    it(`SQLite session: ${ending} at ${checkpoint}`, async () => {
      const store = sqliteStore(dirs)();
      try {
        const outcome = await resumeTwice(checkpoint, ending, store.session('ops'));
        expect(outcome.firstEnd).toBe(ending === 'cancel' ? 'run_cancelled' : 'run_failed');
        expectOnce(outcome, checkpoint);
      } finally {
        await store.close();
      }
    });

    if (checkpoint === 'commit') continue; // without a session there is no commit to fail
    it(`no session (recorded in this process): ${ending} at ${checkpoint}`, async () => {
      const outcome = await resumeTwice(checkpoint, ending, undefined);
      expect(outcome.firstEnd).toBe(ending === 'cancel' ? 'run_cancelled' : 'run_failed');
      expectOnce(outcome, checkpoint);
    });
  }
});

describe("the queue's session (how a BullMQ worker sees its store) records through the store", () => {
  for (const [checkpoint, ending] of CASES) {
    it(`lazySession over SQLite: ${ending} at ${checkpoint}`, async () => {
      const store = sqliteStore(dirs)();
      try {
        const outcome = await resumeTwice(checkpoint, ending, lazySession(store, 'ops'));
        expect(outcome.firstEnd).toBe(ending === 'cancel' ? 'run_cancelled' : 'run_failed');
        expectOnce(outcome, checkpoint);
        // The records are the store's: a second worker's session of the same store is refused.
        const suspensionId = outcome.resumed[0]!.suspensionId;
        expect(await store.session('ops').recordCallStart(suspensionId, 'd1')).toBe(false);
      } finally {
        await store.close();
      }
    });
  }
});

describe('the record is in the store, not in the process', () => {
  it('a second resume in a fresh copy of loopctl (another process) on the same SQLite file does not run deploy again', async () => {
    const file = `${dirs.make()}/sessions.db`;
    const { SqliteSessionStore } = await import('../src/sqlite/index.js');
    const { z } = await import('zod');
    const { scriptedModel, sequentialIds } = await import('../src/testing/index.js');
    const lib = await import('../src/index.js');
    let deploys = 0;
    const agentIn = (
      l: typeof lib,
      kit: { scriptedModel: typeof scriptedModel },
      steps: Parameters<typeof scriptedModel>[0],
    ) =>
      l.defineAgent({
        name: 'ops',
        instructions: '',
        model: kit.scriptedModel(steps),
        tools: [
          l.tool({
            name: 'deploy',
            description: 'deploys',
            parameters: z.object({}),
            needsApproval: true,
            execute: () => (deploys++, 'deployed'),
          }),
        ],
      });
    const suspensionKey = 'k'.repeat(32);
    const store = new SqliteSessionStore(file);
    const agent = agentIn(lib, { scriptedModel }, [
      { toolCalls: [{ name: 'deploy', callId: 'd1' }] },
      { error: new lib.ModelCallError('down', { status: 400, retryable: false }) },
    ]);
    const options = { session: store.session('ops'), idGenerator: sequentialIds(), suspensionKey };
    const suspended = (await lib.start(agent, 'ship', { ...options, approvals: 'suspend' }).result).suspended!;
    const failed = await lib
      .resume(agent, suspended, { d1: { approve: true } }, options)
      .result.catch((e: unknown) => e);
    expect(failed).toMatchObject({ name: 'RunFailedError', stopReason: 'model_error' });
    await store.close();

    vi.resetModules();
    const other = (await import('../src/index.js')) as typeof lib;
    const otherKit = (await import('../src/testing/index.js')) as typeof import('../src/testing/index.js');
    const OtherStore = ((await import('../src/sqlite/index.js')) as typeof import('../src/sqlite/index.js'))
      .SqliteSessionStore;
    const reopened = new OtherStore(file);
    const again = agentIn(other, otherKit, ['finished']);
    const result = await other.resume(
      again,
      JSON.parse(JSON.stringify(suspended)),
      { d1: { approve: true } },
      {
        session: reopened.session('ops'),
        suspensionKey,
      },
    ).result;
    await reopened.close();
    expect({ deploys, output: result.output }).toEqual({ deploys: 1, output: 'finished' });
    const paired = result.items.find((i) => i.type === 'tool_result' && i.callId === 'd1');
    expect(paired).toMatchObject({ isError: true, interrupted: true });
  });
});

describe('a cancel during the commit of a resumed run', () => {
  for (const kind of ['memory', 'SQLite'] as const) {
    it(`${kind}: the commit cannot be cancelled, so the resume completes; resumed again it is refused (already_resumed), deploy ran once`, async () => {
      const store = kind === 'SQLite' ? sqliteStore(dirs)() : undefined;
      const inner = store ? store.session('ops') : new MemorySession();
      let deploys = 0;
      const agent = defineAgent({
        name: 'ops',
        instructions: '',
        model: scriptedModel([{ toolCalls: [{ name: 'deploy', callId: 'd1' }] }, 'all done', 'again']),
        tools: [
          tool({
            name: 'deploy',
            description: 'deploys',
            parameters: z.object({}),
            needsApproval: true,
            execute: () => (deploys++, 'deployed'),
          }),
        ],
      });
      let cancelNow = (): void => undefined;
      const session: Session = {
        load: () => inner.load(),
        append: (items, options) => {
          cancelNow(); // the operator presses Stop while the commit is being written
          return inner.append(items, options);
        },
        acquire: (runId, options) => inner.acquire!(runId, options),
        recordCallStart: (suspensionId, callId) => inner.recordCallStart!(suspensionId, callId),
      };
      try {
        const suspended = (await start(agent, 'ship', { session, approvals: 'suspend' }).result).suspended!;
        const first = resume(agent, suspended, { d1: { approve: true } }, { session });
        let stops = 0;
        cancelNow = () => (stops++, first.cancel('the operator pressed Stop'));
        const result = await first.result;
        expect({ output: result.output, stops }).toEqual({ output: 'all done', stops: 1 });
        cancelNow = () => undefined;
        // This process holds the completed resume's claim; another process is refused by the session.
        expect(() => resume(agent, suspended, { d1: { approve: true } }, { session })).toThrow(
          expect.objectContaining({ name: 'ResumeError', code: 'already_resumed' }) as unknown as Error,
        );
        expect(deploys).toBe(1);
      } finally {
        await store?.close();
      }
    });
  }
});
