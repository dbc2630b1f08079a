/**
 * The `telemetry` run option as the core sees it (docs/telemetry.md, "Your own telemetry"): opened
 * once per run, its observer hears every event in order (the terminal one also after an
 * unsubscribe) with the Item each records, and a throwing observer changes nothing of the run.
 */
import { config } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ConfigurationError,
  defineAgent,
  run,
  tool,
  type Item,
  type RunEvent,
  type RunObserver,
  type RunTelemetry,
  type TelemetryRun,
} from '../src/index.js';
import { instrumentRuns, withTelemetry } from '../src/otel/index.js';
import { collectEvents, scriptedModel, sequentialIds } from '../src/testing/index.js';

const previous = config.onUnhandledError;
afterEach(() => void (config.onUnhandledError = previous));

const echo = tool({ name: 'echo', description: 'echo', parameters: z.object({}), execute: () => 'echoed' });
const agent = () =>
  defineAgent({
    name: 'a',
    instructions: '',
    tools: [echo],
    model: scriptedModel([{ toolCalls: [{ name: 'echo' }] }, 'done']),
  });

describe('the telemetry run option', () => {
  it('is checked like every option: a value without open() is a ConfigurationError naming it', () => {
    const bad = { telemetry: {} as RunTelemetry };
    expect(() => run(agent(), 'go', bad)).toThrow(ConfigurationError);
    expect(() => run(agent(), 'go', bad)).toThrow(/options\.telemetry/);
  });

  it('is opened once per run; its observer hears every event, in order, with the Item each records', async () => {
    const opened: TelemetryRun[] = [];
    const heard: string[] = [];
    const telemetry: RunTelemetry = {
      open: (r) => {
        opened.push(r);
        return {
          event: (e: RunEvent, item?: Item) => void heard.push(item ? `${e.type}:${item.type}` : e.type),
          ending: (outcome) => void heard.push(`ending:${outcome}`),
        };
      },
    };
    const events = await collectEvents(run(agent(), 'go', { telemetry, idGenerator: sequentialIds() }));
    expect(opened).toHaveLength(1);
    expect(opened[0]).toMatchObject({ runId: 'run-1', agent: 'a', model: 'scripted', input: 'go' });
    expect(opened[0]!.parent).toBeUndefined();
    expect(heard).toEqual([
      'run_started',
      'turn_started',
      'model_request_started',
      'model_response_completed:assistant',
      'tool_call_started',
      'tool_call_completed:tool_result',
      'turn_completed',
      'turn_started',
      'model_request_started',
      'text_delta',
      'model_response_completed:assistant',
      'turn_completed',
      'ending:completed',
      'run_completed',
    ]);
    expect(heard.filter((h) => !h.startsWith('ending')).length).toBe(events.length);
  });

  it('hears the terminal event of an unsubscribed run, which no subscriber gets', () => {
    const heard: string[] = [];
    const observer = { event: (e: RunEvent) => void heard.push(e.type), ending: (o: string) => void heard.push(o) };
    const telemetry: RunTelemetry = { open: () => observer };
    const model = scriptedModel([{ text: 'late', delayMs: 10_000 }]);
    const got: string[] = [];
    const agentU = defineAgent({ name: 'u', instructions: '', model });
    const sub = run(agentU, 'go', { telemetry }).subscribe((e) => got.push(e.type));
    sub.unsubscribe();
    expect(got).toEqual(['run_started']);
    expect(heard.slice(-2)).toEqual(['cancelled', 'run_cancelled']);
  });

  it('a throwing open, event or ending is reported as unhandled and the run is unchanged', async () => {
    const reported: unknown[] = [];
    config.onUnhandledError = (err) => void reported.push(err);
    const boom = (where: string) => () => {
      throw new Error(where);
    };
    const observer: RunObserver = { event: boom('event'), ending: boom('ending') };
    const throwing: RunTelemetry = { open: () => observer };
    const plain = await collectEvents(run(agent(), 'go', { idGenerator: sequentialIds() }));
    const watched = await collectEvents(run(agent(), 'go', { telemetry: throwing, idGenerator: sequentialIds() }));
    const strip = (events: RunEvent[]) => events.map(({ at: _at, ...rest }) => rest);
    expect(strip(watched)).toEqual(strip(plain));
    expect(reported).toHaveLength(plain.length + 1);
    expect((reported.at(-2) as Error).message).toBe('ending');
    reported.length = 0;
    await collectEvents(run(agent(), 'go', { telemetry: { open: boom('open') } }));
    expect(reported.map((e) => (e as Error).message)).toEqual(['open']);
  });
});

describe('loopctl/otel options', () => {
  it('withTelemetry and instrumentRuns name the bad field', () => {
    expect(() => withTelemetry({ captureContent: { maxChars: 0 } })).toThrow(/options\.captureContent\.maxChars/);
    expect(() => withTelemetry({ captureContent: 'yes' as unknown as boolean })).toThrow(/options\.captureContent/);
    expect(() => withTelemetry({ tracerProvider: {} as never })).toThrow(/options\.tracerProvider/);
    expect(() => withTelemetry(null as never)).toThrow(ConfigurationError);
    expect(() => instrumentRuns({} as never)).toThrow(/runs\.start/);
  });
});
