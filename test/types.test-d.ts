import { Observable } from 'rxjs';
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { defineAgent, run, start, tool, type RunEvent, type RunResult, type ToolContext } from '../src/index.js';
import { scriptedModel } from '../src/testing/index.js';

describe('RunEvent', () => {
  it('narrows on type', () => {
    const handle = (event: RunEvent) => {
      if (event.type === 'text_delta') expectTypeOf(event.delta).toEqualTypeOf<string>();
      if (event.type === 'run_cancelled') {
        expectTypeOf(event.phase).toEqualTypeOf<
          | 'turn_entry'
          | 'hook'
          | 'session_load'
          | 'model_request'
          | 'model_stream'
          | 'stream_gate'
          | 'rescue'
          | 'between_tools'
          | 'wave_boundary'
          | 'tool_call'
          | 'backoff'
          | 'dispatch'
          | 'approval'
          | 'compaction'
        >();
        expectTypeOf(event.reason).toEqualTypeOf<unknown>();
      }
      if (event.type === 'run_failed')
        expectTypeOf(event.stopReason).toEqualTypeOf<
          | 'max_turns'
          | 'model_error'
          | 'configuration_error'
          | 'internal_error'
          | 'session_error'
          | 'guardrail'
          | 'output_invalid'
          | 'worker_lost'
        >();
      if (event.type === 'run_completed')
        expectTypeOf(event.stopReason).toEqualTypeOf<'completed' | 'stopped' | 'needs_approval' | 'budget'>();
      if (event.type === 'run_cancelled') expectTypeOf(event.stopReason).toEqualTypeOf<'cancelled'>();
      if (event.type === 'tool_call_started') expectTypeOf(event).toHaveProperty('callId').toEqualTypeOf<string>();
      if (event.type === 'subrun_event') expectTypeOf(event.event).toEqualTypeOf<RunEvent>();
      // @ts-expect-error a text_delta has no phase
      if (event.type === 'text_delta') void event.phase;
    };
    expectTypeOf(handle).toBeFunction();
  });

  it('run() returns an Observable of RunEvent and start() a result of RunResult', () => {
    const agent = defineAgent({ name: 'a', instructions: '', model: scriptedModel([]) });
    expectTypeOf(run(agent, 'x')).toEqualTypeOf<Observable<RunEvent>>();
    expectTypeOf(start(agent, 'x').result).toEqualTypeOf<Promise<RunResult>>();
  });

  it('an agent\'s output schema types RunResult.value (docs/run-control.md, "Structured output")', () => {
    const output = z.object({ city: z.string(), population: z.number() });
    const agent = defineAgent({ name: 'a', instructions: '', model: scriptedModel([]), output });
    expectTypeOf(agent.output).toEqualTypeOf<z.ZodType<{ city: string; population: number }> | undefined>();
    expectTypeOf(start(agent, 'x').result).toEqualTypeOf<Promise<RunResult<{ city: string; population: number }>>>();
    void start(agent, 'x').result.then((r) => {
      expectTypeOf(r.value).toEqualTypeOf<{ city: string; population: number } | undefined>();
    });
    expectTypeOf(run(agent, 'x')).toEqualTypeOf<Observable<RunEvent>>();
  });
});

describe('tool()', () => {
  it('infers the execute argument from its zod schema', () => {
    tool({
      name: 'read_log',
      description: 'Read a log',
      parameters: z.object({ path: z.string(), lines: z.number().optional() }),
      execute: (args, ctx) => {
        expectTypeOf(args).toEqualTypeOf<{ path: string; lines?: number | undefined }>();
        expectTypeOf(ctx).toMatchTypeOf<ToolContext>();
        expectTypeOf(ctx.signal).toEqualTypeOf<AbortSignal>();
        return args.path;
      },
    });
  });

  it('a raw JSON Schema gives a record argument', () => {
    tool({
      name: 'mcp_tool',
      description: '',
      parameters: { type: 'object', properties: { q: { type: 'string' } } },
      execute: (args) => {
        expectTypeOf(args).toEqualTypeOf<Record<string, unknown>>();
        return 'ok';
      },
    });
  });
});
