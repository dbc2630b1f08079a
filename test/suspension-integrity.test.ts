import { createHash, createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { hmacSha256, sha256 } from '../src/control/hmac.js';
import { ConfigurationError, ResumeError, defineAgent, resume, start, tool, type Suspended } from '../src/index.js';
import { scriptedModel, sequentialIds } from '../src/testing/index.js';

/**
 * A suspension is verified before anything runs (docs/run-control.md, "Integrity"): every tampering of a
 * saved suspension is refused with its ResumeError code, and no tool runs (executions are counted).
 */
const suspensionKey = 'integrity-spec-key-of-32-bytes!!';
const executions: string[] = [];
const gated = tool({
  name: 'gated',
  description: 'g',
  parameters: z.object({ target: z.string() }),
  needsApproval: true,
  execute: ({ target }, ctx) => (executions.push(`gated:${ctx.callId}:${target}`), 'G'),
});
const free = tool({
  name: 'free',
  description: 'f',
  parameters: z.object({}),
  execute: (_a, ctx) => (executions.push(`free:${ctx.callId}`), 'F'),
});
const agentOf = (name = 'ops', usage?: object, resumed = true) =>
  defineAgent({
    name,
    instructions: '',
    tools: [gated, free],
    model: scriptedModel([
      ...(resumed
        ? []
        : [
            {
              toolCalls: [
                { name: 'free', callId: 'f1' },
                { name: 'gated', callId: 'g1', arguments: { target: 'staging' } },
              ],
              ...(usage ? { usage: usage as never } : {}),
            },
          ]),
      'finished',
    ]),
  });

async function saved(key: string | null = suspensionKey, usage?: object): Promise<Suspended> {
  const agent = agentOf('ops', usage, false);
  const handle = start(agent, 'go', {
    approvals: 'suspend',
    idGenerator: sequentialIds(),
    ...(key === null ? {} : { suspensionKey: key }),
  });
  const suspended = (await handle.result).suspended!;
  return JSON.parse(JSON.stringify(suspended)) as Suspended; // saved outside any session
}

type Mutable = { -readonly [K in keyof Suspended]: any };
const assistantOf = (s: Mutable) => s.items.find((i: { type: string }) => i.type === 'assistant');

const tamperings: [string, (s: Mutable) => void, string][] = [
  ['a pending call removed from pending', (s) => (s.pending = []), 'pending_removed'],
  [
    'a call added to the last assistant Item',
    (s) => assistantOf(s).toolCalls.push({ callId: 'x1', name: 'gated', arguments: '{"target":"prod"}' }),
    'call_added',
  ],
  [
    'a call added to the Item and to pending',
    (s) => {
      const call = { callId: 'x1', name: 'gated', arguments: '{"target":"prod"}' };
      assistantOf(s).toolCalls.push(call);
      s.pending.push(call);
    },
    'call_added',
  ],
  [
    "a pending call's arguments changed in the Item and in pending",
    (s) => {
      assistantOf(s).toolCalls[1].arguments = '{"target":"prod"}';
      s.pending[0].arguments = '{"target":"prod"}';
    },
    'arguments_changed',
  ],
  [
    "a pending call's arguments changed in pending only",
    (s) => (s.pending[0].arguments = '{"target":"prod"}'),
    'arguments_changed',
  ],
  ['the agent name rewritten', (s) => (s.agent = 'other'), 'agent_mismatch'],
  [
    'a decision for an unknown call in suspended.decisions',
    (s) => (s.decisions = { zz: { approve: true } }),
    'unknown_call',
  ],
  ['an earlier Item rewritten', (s) => (s.items[0].text = 'deploy everything'), 'tampered'],
  ['the turn changed', (s) => (s.turn = 7), 'tampered'],
  ['the seal removed', (s) => delete s.seal, 'unsigned'],
];

describe('a tampered suspension never runs anything', () => {
  for (const [what, tamper, code] of tamperings) {
    it(`${what} → ResumeError ${code}, no tool runs`, async () => {
      const s = (await saved()) as Mutable;
      tamper(s);
      executions.length = 0;
      const decisions = {
        g1: { approve: true } as const,
        ...(s.pending.some((c: { callId: string }) => c.callId === 'x1') ? { x1: { approve: true } as const } : {}),
      };
      let error: unknown;
      try {
        await resume(agentOf(), s as Suspended, decisions, { suspensionKey }).result;
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ResumeError);
      expect((error as ResumeError).code).toBe(code);
      expect(executions).toEqual([]);
      console.log(`${what}: refused ${code}, ${executions.length} executions`);
    });
  }

  it('another agent resuming an intact suspension → agent_mismatch, no tool runs', async () => {
    const s = await saved();
    executions.length = 0;
    expect(() => resume(agentOf('intruder'), s, { g1: { approve: true } }, { suspensionKey })).toThrow(
      expect.objectContaining({ code: 'agent_mismatch' }),
    );
    expect(executions).toEqual([]);
  });

  it('a decision for a call that is not pending → unknown_call, no tool runs', async () => {
    const s = await saved();
    executions.length = 0;
    expect(() => resume(agentOf(), s, { g1: { approve: true }, f1: { approve: true } }, { suspensionKey })).toThrow(
      expect.objectContaining({ code: 'unknown_call', callId: 'f1' }),
    );
    expect(executions).toEqual([]);
  });

  it('another key → key_mismatch; without a key, a suspension sealed with one → key_mismatch', async () => {
    const s = await saved();
    const other = 'another-key-another-key-another!!';
    expect(() => resume(agentOf(), s, { g1: { approve: true } }, { suspensionKey: other })).toThrow(
      expect.objectContaining({ code: 'key_mismatch' }),
    );
    expect(() => resume(agentOf(), s, { g1: { approve: true } })).toThrow(
      expect.objectContaining({ code: 'key_mismatch' }),
    );
  });

  it('an intact suspension resumes: the free call and the approved call run once each', async () => {
    const s = await saved();
    executions.length = 0;
    const result = await resume(agentOf(), s, { g1: { approve: true } }, { suspensionKey }).result;
    expect(result.output).toBe('finished');
    expect(executions).toEqual(['free:f1', 'gated:g1:staging']);
  });

  it('without a key the process key seals it: it resumes in this process', async () => {
    const s = await saved(null);
    executions.length = 0;
    await resume(agentOf(), s, { g1: { approve: false, reason: 'no' } }).result;
    expect(executions).toEqual(['free:f1']);
  });

  it('a usage without totalTokens never makes a suspension unresumable', async () => {
    const s = await saved(suspensionKey, { inputTokens: 3, outputTokens: 4 });
    expect(s.usage).toMatchObject({ inputTokens: 3, outputTokens: 4, totalTokens: 7 });
    const result = await resume(agentOf(), s, { g1: { approve: true } }, { suspensionKey }).result;
    expect(result.output).toBe('finished');
  });

  it('a suspensionKey shorter than 32 bytes is a ConfigurationError naming it', () => {
    expect(() => start(agentOf(), 'go', { suspensionKey: 'short' })).toThrow(ConfigurationError);
    expect(() => start(agentOf(), 'go', { suspensionKey: 'short' })).toThrow(/options\.suspensionKey/);
  });
});

describe('the seal uses HMAC-SHA256', () => {
  it('equals node:crypto for every padding boundary', () => {
    for (const n of [0, 1, 55, 56, 63, 64, 65, 119, 120, 1000]) {
      const data = randomBytes(n);
      const key = randomBytes((n % 90) + 1);
      expect(Buffer.from(sha256(data)).toString('hex')).toBe(createHash('sha256').update(data).digest('hex'));
      expect(Buffer.from(hmacSha256(key, data)).toString('hex')).toBe(
        createHmac('sha256', key).update(data).digest('hex'),
      );
    }
  });
});
