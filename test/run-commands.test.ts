/**
 * Run commands are one protocol: parseRunCommand is the only validator (JavaScript and HTTP give the same
 * ConfigurationError for the same bad command), a worker's message reader never throws and refuses a bad
 * message naming the field, applyRunCommand never throws, and every duration shares the bound MAX_DURATION_MS
 * (2^31-1 ms: a longer one would fire at once, so it is refused naming the field).
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ConfigurationError,
  MAX_DURATION_MS,
  RunControl,
  applyRunCommand,
  defineAgent,
  localRuns,
  mcpTools,
  openaiChat,
  parseRunCommand,
  start,
  tool,
} from '../src/index.js';
import { createHandler } from '../src/http/index.js';
import { queueRuns, startWorker } from '../src/bullmq/index.js';
import { readRequest } from '../src/bullmq/requests.js';
import { anthropicMessages } from '../src/anthropic/index.js';
import { gemini } from '../src/model/gemini/index.js';
import { requestTimeout } from '../src/model/openai/provider.js';
import type { ModelRequest } from '../src/model/types.js';
import { sdkTimeoutMs } from '../src/duration.js';
import { QueueAuth } from '../src/bullmq/auth.js';
import { shellTool } from '../src/node/index.js';
import { SqliteSessionStore } from '../src/sqlite/index.js';
import { gate, scriptedModel } from '../src/testing/index.js';
import { bearer, listen, readStream, request } from './support/http.js';

const refused = (fn: () => unknown): { field?: string; message?: string } => {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigurationError);
    return { field: (error as ConfigurationError).field, message: (error as Error).message };
  }
  throw new Error('did not throw');
};
const TOO_LONG = MAX_DURATION_MS + 1;
const THIRTY_DAYS = 30 * 86_400_000;
const agent = () => defineAgent({ name: 'helper', instructions: 'Help.', model: scriptedModel(['hi']) });

describe('parseRunCommand', () => {
  it('parses each command, leaving out undefined fields; a stop at the longest duration is accepted', () => {
    expect(parseRunCommand({ op: 'stop', at: 'turn_end', graceMs: undefined })).toEqual({ op: 'stop', at: 'turn_end' });
    expect(parseRunCommand({ op: 'stop', graceMs: MAX_DURATION_MS })).toEqual({ op: 'stop', graceMs: MAX_DURATION_MS });
    expect(parseRunCommand({ op: 'decide', callId: 'c', approve: false, reason: 'no' })).toEqual({
      op: 'decide',
      callId: 'c',
      approve: false,
      reason: 'no',
    });
    expect(parseRunCommand({ op: 'cancel_tool_call', callId: 'c' })).toEqual({ op: 'cancel_tool_call', callId: 'c' });
  });

  it('names the bad field: op, a bad value, an unknown key, a non-object command', () => {
    expect(refused(() => parseRunCommand({ op: 'pause' })).field).toBe('op');
    expect(refused(() => parseRunCommand({})).field).toBe('op');
    expect(refused(() => parseRunCommand({ op: 'stop', graceMs: TOO_LONG })).field).toBe('graceMs');
    expect(refused(() => parseRunCommand({ op: 'withdraw', steeringId: 's', extra: 1 })).field).toBe('extra');
    expect(refused(() => parseRunCommand('stop')).field).toBe('command');
    expect(refused(() => parseRunCommand([])).field).toBe('command');
    const revoked = Proxy.revocable({}, {});
    revoked.revoke();
    expect(refused(() => parseRunCommand(revoked.proxy)).field).toBe('command');
  });
});

describe('one validator: the same bad command, the same ConfigurationError', () => {
  it('localRuns.stop and POST /runs/:id/stop refuse graceMs above 2^31-1 ms with the same field and message', async () => {
    const hold = gate();
    const model = scriptedModel([{ text: ['Working'], hold: hold.wait$ }]);
    const runs = localRuns({ agents: { helper: defineAgent({ name: 'helper', instructions: 'Help.', model }) } });
    const server = await listen(createHandler({ runs, authorize: bearer }));
    try {
      const started = await readStream(`${server.url}/agents/helper/runs`, {
        principal: 'alice',
        body: {
          threadId: 't',
          runId: 'c',
          messages: [{ id: 'u', role: 'user', content: 'hi' }],
          tools: [],
          context: [],
          state: {},
          forwardedProps: {},
        },
        dropAfter: 1,
      });
      const runId = (started.frames[0]!.event as { runId: string }).runId;
      const js = await runs.stop(runId, { at: 'turn_end', graceMs: TOO_LONG }, 'alice').then(
        () => undefined,
        (e: ConfigurationError) => ({ field: e.field, message: e.message }),
      );
      const http = await request(`${server.url}/runs/${runId}/stop`, {
        principal: 'alice',
        body: { at: 'turn_end', graceMs: TOO_LONG },
      });
      expect(js).toEqual({ field: 'graceMs', message: expect.stringContaining('2147483647') });
      expect(http).toMatchObject({ status: 400, body: { error: { field: 'graceMs', message: js!.message } } });
      // The run was not touched: a stop within the bound is still taken.
      expect(await runs.stop(runId, { graceMs: MAX_DURATION_MS }, 'alice')).toBe(true);
      expect(await runs.cancel(runId, 'done', 'alice')).toBe(true);
    } finally {
      hold.open();
      await server.close();
    }
  });
});

describe('RunControl speaks the same rule', () => {
  it('approve, reject, cancelToolCall and stop refuse what the decide, cancel_tool_call and stop commands refuse', () => {
    const control = new RunControl();
    const same = (fn: () => unknown, command: Record<string, unknown>) => {
      const fromControl = refused(fn);
      expect(fromControl).toEqual(refused(() => parseRunCommand(command)));
      return fromControl.field;
    };
    const fields = [
      same(() => control.approve(''), { op: 'decide', callId: '', approve: true }),
      same(() => control.approve(7 as unknown as string), { op: 'decide', callId: 7, approve: true }),
      same(() => control.reject('c', 3 as unknown as string), { op: 'decide', callId: 'c', approve: false, reason: 3 }),
      same(() => control.reject('', 'no'), { op: 'decide', callId: '', approve: false, reason: 'no' }),
      same(() => control.cancelToolCall(''), { op: 'cancel_tool_call', callId: '' }),
      same(() => control.cancelAwaitingApproval(null as unknown as string), { op: 'cancel_tool_call', callId: null }),
      same(() => control.stop({ graceMs: TOO_LONG }), { op: 'stop', graceMs: TOO_LONG }),
    ];
    expect(fields).toEqual(['callId', 'callId', 'reason', 'callId', 'callId', 'callId', 'graceMs']);
    // Well-formed requests with no live run answer false, never throw.
    expect([control.approve('c'), control.reject('c', 'no'), control.cancelToolCall('c')]).toEqual([
      false,
      false,
      false,
    ]);
  });
});

describe("a worker's message reader", () => {
  const open = QueueAuth.of({ insecure: true });
  it('never throws: not JSON, a bad command and a bad mode are refusals naming the field, with the envelope', () => {
    const envelope = { reqId: '1', replyTo: 'r', cid: 'c1' };
    const read = (message: string) => readRequest(message, open);
    expect(read('{nope')).toMatchObject({ ok: false, envelope: {}, refusal: { name: 'ConfigurationError' } });
    const bad = read(JSON.stringify({ ...envelope, runId: 'r1', command: { op: 'stop', graceMs: null } }));
    expect(bad).toMatchObject({ ok: false, envelope, refusal: { name: 'ConfigurationError', field: 'graceMs' } });
    const mode = read(JSON.stringify({ ...envelope, runId: 'r1', mode: 'x', command: { op: 'cancel' } }));
    expect(mode).toMatchObject({ ok: false, refusal: { field: 'mode' } });
    expect(read(JSON.stringify({ ...envelope, command: { op: 'cancel' } }))).toMatchObject({
      ok: false,
      refusal: { field: 'runId' },
    });
    expect(read(JSON.stringify({ reqId: '1', runId: 'r1', command: { op: 'cancel' } }))).toMatchObject({
      ok: false,
      refusal: { field: 'cid' },
    });
    expect(read(JSON.stringify({ ...envelope, runId: 'r1', command: { op: 'withdraw', steeringId: 's' } }))).toEqual({
      ok: true,
      request: { ...envelope, runId: 'r1', command: { op: 'withdraw', steeringId: 's' } },
    });
  });

  it('with a secret: an unsigned or mis-signed message is a QueueAuthError refusal before its command is read', () => {
    const auth = QueueAuth.of({ secret: 'k'.repeat(32) });
    const message = { reqId: '1', replyTo: 'r', cid: 'c1', runId: 'r1', command: { op: 'stop', graceMs: null } };
    expect(readRequest(JSON.stringify(message), auth)).toMatchObject({
      ok: false,
      refusal: { name: 'QueueAuthError', code: 'unsigned' },
    });
    const other = QueueAuth.of({ secret: 'x'.repeat(32) });
    const { mac: _mac, ...rest } = { ...message, mac: '' };
    const forged = { ...rest, mac: other.sign(['request', 'r1', 'c1', message.command, null, '1', 'r']) };
    expect(readRequest(JSON.stringify(forged), auth)).toMatchObject({
      ok: false,
      refusal: { name: 'QueueAuthError', code: 'mis_signed' },
    });
  });
});

describe('applyRunCommand', () => {
  it('never throws: what the run throws comes back as a refusal naming it', () => {
    const throwing = () => {
      throw new ConfigurationError('callId', 'broken');
    };
    const target = {
      handle: { cancel: throwing, stop: throwing, approve: throwing, reject: throwing, cancelToolCall: throwing },
      terminal: () => undefined,
      steer: throwing,
      withdraw: throwing,
    };
    expect(applyRunCommand(target, { op: 'decide', callId: 'c', approve: true })).toEqual({
      ok: false,
      op: 'decide',
      error: { name: 'ConfigurationError', field: 'callId', message: 'callId: broken' },
    });
    expect(applyRunCommand(target, { op: 'steer', text: 'x' })).toMatchObject({ ok: false, op: 'steer' });
  });
});

describe('every duration shares MAX_DURATION_MS', () => {
  it('a 30-day runMs or approvalMs, a too-long retry delay or stop grace: a ConfigurationError naming it', () => {
    for (const key of ['runMs', 'approvalMs', 'idleMs', 'toolMs']) {
      expect(refused(() => start(agent(), 'hi', { deadlines: { [key]: THIRTY_DAYS } })).field).toBe(
        `options.deadlines.${key}`,
      );
    }
    expect(refused(() => start(agent(), 'hi', { retry: { maxDelayMs: TOO_LONG } })).field).toBe(
      'options.retry.maxDelayMs',
    );
    expect(refused(() => new RunControl().stop({ graceMs: THIRTY_DAYS })).field).toBe('graceMs');
    expect(refused(() => new RunControl().stop({ graceMs: 1.5 })).field).toBe('graceMs');
    expect(new RunControl().stop({ graceMs: MAX_DURATION_MS })).toBe(false); // accepted: no run is live
  });

  it("a tool's timeoutMs, a breaker's cooldownMs, the shell tool's times, localRuns' and the queue's times", () => {
    const slow = (timeoutMs: number) =>
      tool({ name: 't', description: 'd', parameters: z.object({}), execute: () => 'x', timeoutMs });
    expect(
      refused(() => defineAgent({ name: 'a', instructions: 'i', model: scriptedModel([]), tools: [slow(TOO_LONG)] }))
        .field,
    ).toBe('tool.timeoutMs');
    expect(
      refused(() =>
        defineAgent({ name: 'a', instructions: 'i', model: scriptedModel([]), breaker: { cooldownMs: TOO_LONG } }),
      ).field,
    ).toBe('agent.breaker.cooldownMs');
    expect(refused(() => shellTool('/tmp', { timeoutMs: THIRTY_DAYS })).field).toBe('options.timeoutMs');
    expect(refused(() => shellTool('/tmp', { killGraceMs: Infinity })).field).toBe('options.killGraceMs');
    const agents = { helper: agent() };
    expect(refused(() => localRuns({ agents, retainFinishedMs: TOO_LONG })).field).toBe('options.retainFinishedMs');
    expect(refused(() => localRuns({ agents, retainIdleThreadsMs: 0 })).field).toBe('options.retainIdleThreadsMs');
    expect(refused(() => localRuns({ agents, retainFinishedRuns: -1 })).field).toBe('options.retainFinishedRuns');
    const queue = { connection: 'redis://127.0.0.1:1', queue: 'q', insecure: true };
    expect(refused(() => queueRuns({ ...queue, steerTimeoutMs: TOO_LONG })).field).toBe('options.steerTimeoutMs');
    expect(refused(() => queueRuns({ ...queue, retainFinishedMs: NaN })).field).toBe('options.retainFinishedMs');
  });

  it("MCP tools' timeouts and SQLite's busy timeout: the same bound", async () => {
    await expect(mcpTools({} as never, { timeoutMs: THIRTY_DAYS })).rejects.toMatchObject({
      name: 'ConfigurationError',
      field: 'options.timeoutMs',
    });
    await expect(mcpTools({} as never, { maxTotalTimeoutMs: Infinity })).rejects.toMatchObject({
      field: 'options.maxTotalTimeoutMs',
    });
    expect(refused(() => new SqliteSessionStore(':memory:', { busyTimeoutMs: TOO_LONG })).field).toBe(
      'options.busyTimeoutMs',
    );
  });

  it("the adapters' timeoutMs and the SDK timer of a request bounded near 2^31-1 ms: the same bound", () => {
    expect(refused(() => openaiChat({ model: 'm', apiKey: 'k', timeoutMs: TOO_LONG })).field).toBe('timeoutMs');
    expect(refused(() => anthropicMessages({ model: 'm', apiKey: 'k', timeoutMs: Infinity })).field).toBe('timeoutMs');
    expect(refused(() => gemini({ model: 'm', apiKey: 'k', timeoutMs: THIRTY_DAYS })).field).toBe('timeoutMs');
    // The engine's deadline plus the SDK's margin is capped: past 2^31-1 Node's timer would fire after 1 ms.
    const request = { timeoutMs: MAX_DURATION_MS - 10 } as ModelRequest;
    expect(requestTimeout({ model: 'm' }, request)).toBe(MAX_DURATION_MS);
    expect(sdkTimeoutMs(60_000, 1_000)).toBe(61_000);
  });

  it("a worker's times: the same bound", async () => {
    const options = { connection: 'redis://127.0.0.1:1', queue: 'q', agents: {}, insecure: true };
    for (const key of ['lockDurationMs', 'shutdownGraceMs', 'eventStoreOutageMs']) {
      await expect(startWorker({ ...options, [key]: TOO_LONG })).rejects.toMatchObject({
        name: 'ConfigurationError',
        field: `options.${key}`,
      });
    }
  });
});
