import type { AGUIEvent } from '@ag-ui/core';
import { from, lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent, start, tool } from '../src/index.js';
import { LOOPCTL_EVENTS, toAgUi } from '../src/ag-ui/index.js';
import { collectEvents, scriptedModel, sequentialIds } from '../src/testing/index.js';
import { checkAgUiStream } from './support/ag-ui.js';

/** Approvals on the AG-UI wire (docs/ui.md, "Event mapping"): the request, and a suspension as an interrupt. */
describe('AG-UI: approvals', () => {
  it('tool_approval_requested → CUSTOM; a suspended run → loopctl.suspended, RUN_FINISHED interrupt', async () => {
    const deploy = tool({
      name: 'deploy',
      description: 'd',
      parameters: z.object({}),
      needsApproval: true,
      execute: () => 'ok',
    });
    const model = scriptedModel([{ toolCalls: [{ name: 'deploy', callId: 'call_d' }] }]);
    const agent = defineAgent({ name: 'a', instructions: '', model, tools: [deploy] });
    const handle = start(agent, 'ship', { approvals: 'suspend', idGenerator: sequentialIds() });
    const events = await collectEvents(handle.events$);
    const agui = await lastValueFrom(from(events).pipe(toAgUi({ threadId: 't' }), toArray()));
    await checkAgUiStream(agui);
    const custom = agui.filter((e): e is AGUIEvent & { name: string; value: unknown } => e.type === 'CUSTOM');
    expect(custom.map((e) => e.name)).toEqual([LOOPCTL_EVENTS.approvalRequested, LOOPCTL_EVENTS.suspended]);
    expect(custom[0]!.value).toEqual({ callId: 'call_d', name: 'deploy', arguments: '{}' });
    expect(custom[1]!.value).toEqual({ suspended: (await handle.result).suspended });
    expect(agui.at(-1)).toMatchObject({
      type: 'RUN_FINISHED',
      outcome: { type: 'interrupt', interrupts: [{ id: 'call_d', reason: 'tool_approval', toolCallId: 'call_d' }] },
    });
  });
});
