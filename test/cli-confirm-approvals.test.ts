import { lastValueFrom, tap, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent, run, tool, type RunEvent } from '../src/index.js';
import { approvalOptions, askApproval, confirmApprovals, withApprovals, REFUSED } from '../src/cli/confirm.js';
import type { LineInput } from '../src/cli/line-input.js';
import { scriptedModel } from '../src/testing/index.js';

/** `--confirm` on tool approvals (docs/run-control.md, "Approvals"), in-process: the answers decide the calls. */
describe('--confirm: approvals', () => {
  const writes: string[] = [];
  const tools = withApprovals([
    tool({
      name: 'write_file',
      description: 'w',
      parameters: z.object({ path: z.string() }),
      execute: ({ path }) => void writes.push(path),
    }),
    tool({ name: 'read_file', description: 'r', parameters: z.object({}), execute: () => 'text' }),
  ]);

  const runWith = async (answers: boolean[]) => {
    writes.length = 0;
    const asked: string[] = [];
    const confirm = confirmApprovals(async (call) => {
      asked.push(`${call.name} ${call.arguments}`);
      return answers.shift() ?? false;
    });
    const model = scriptedModel([
      {
        toolCalls: [
          { name: 'write_file', callId: 'w1', arguments: { path: 'a' } },
          { name: 'read_file', callId: 'r1' },
        ],
      },
      { toolCalls: [{ name: 'write_file', callId: 'w2', arguments: { path: 'b' } }] },
      'done',
    ]);
    const agent = defineAgent({ name: 'cli', instructions: '', model, tools });
    const events = await lastValueFrom(
      run(agent, 'write', approvalOptions({}, confirm)).pipe(
        tap((e: RunEvent) => confirm.watch(e)),
        toArray(),
      ),
    );
    return { events, asked, model };
  };

  it('write_file and run_shell need approval, other tools do not', () => {
    expect(tools.map((t) => [t.name, t.needsApproval ?? false])).toEqual([
      ['write_file', true],
      ['read_file', false],
    ]);
  });

  it('a refusal reaches the model as tool_call_failed (ToolCallRejectedError); a yes runs the call', async () => {
    const { events, asked, model } = await runWith([false, true]);
    expect(asked).toEqual(['write_file {"path":"a"}', 'write_file {"path":"b"}']);
    expect(writes).toEqual(['b']);
    const failed = events.find((e) => e.type === 'tool_call_failed');
    expect(failed).toMatchObject({
      callId: 'w1',
      interrupted: false,
      error: { name: 'ToolCallRejectedError', message: `the call was rejected: ${REFUSED}` },
    });
    const toolResults = model.requests[1]!.items.filter((i) => i.type === 'tool_result');
    expect(toolResults).toEqual([
      { type: 'tool_result', callId: 'w1', output: `Error: the call was rejected: ${REFUSED}`, isError: true },
      { type: 'tool_result', callId: 'r1', output: 'text', isError: false },
    ]);
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', output: 'done' });
  });

  it('the [confirm] line shows the arguments as words (path: x.txt, content: …), never JSON text', async () => {
    const said: string[] = [];
    const input = { ask: async () => 'y' } as unknown as LineInput;
    const call = { callId: 'w', name: 'write_file', arguments: '{"path":"x.txt","content":"hi\\nthere\\u001b[2J"}' };
    expect(await askApproval(call, input, (line) => said.push(line))).toBe('y');
    expect(said).toEqual(['[confirm] write_file path: x.txt, content: hi there\\x1b[2J']);
  });

  it('the question waits for the user: no approval deadline with --confirm', () => {
    const confirm = confirmApprovals(async () => true);
    expect(approvalOptions({ idleMs: 5 }, confirm).deadlines).toEqual({ idleMs: 5, approvalMs: false });
    expect(approvalOptions({ idleMs: 5 }, undefined)).toEqual({ deadlines: { idleMs: 5 } });
  });
});
