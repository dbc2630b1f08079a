/**
 * `loopctl --confirm` with a task (answers on piped stdin) and the prompt
 * loop's pieces in-process. The prompt loop itself needs a terminal: it is
 * tested on a pseudo-terminal in test/services/cli-interactive-tty.test.ts.
 * Every wait is for an output marker or a request, never a sleep.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { NEVER } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startOpenAIServer,
  textStream,
  toolCallsStream,
  type OpenAIServer,
  type RecordedRequest,
} from './support/openai-server.js';
import { parseCli, UsageError } from '../src/cli/args.js';
import { isYes } from '../src/cli/confirm.js';
import { InteractiveLoop } from '../src/cli/interactive.js';
import { StopSignals } from '../src/cli/signals.js';
import { MemorySession } from '../src/index.js';
import { scriptedModel } from '../src/testing/index.js';
import { TerminalRenderer } from '../src/cli/render.js';
import type { RunEvent } from '../src/events.js';
import { ensureBuilt, removeTempFolders, runBin, tempFolder, waitFor } from './cli-helpers.js';

let server: OpenAIServer;
beforeAll(async () => {
  server = await startOpenAIServer();
  await ensureBuilt();
}, 180_000);
afterAll(async () => {
  removeTempFolders();
  await server?.close();
});

const endpoint = () => ['--base-url', server.baseURL, '--api-key', 'test', '--model', 'test-model'];

describe('loopctl --confirm', () => {
  const writeCall = toolCallsStream([{ id: 'call_w', name: 'write_file', args: { path: 'x.txt', content: 'hi' } }]);
  const toolMessages = (req: RecordedRequest): string[] =>
    req.body.messages.filter((m: any) => m.role === 'tool').map((m: any) => m.content);

  it('one-shot: the answer is read from stdin; a refusal reaches the model and nothing is written', async () => {
    const dir = tempFolder();
    const n = server.requests.length;
    server.enqueue(writeCall, textStream('Not written.'));
    const cli = runBin([...endpoint(), '--confirm', 'write x.txt'], dir, undefined, 'pipe');
    await waitFor('the question', () => cli.stderr().includes('allow? [y/N]'));
    cli.send('no');
    const { code, stdout } = await cli.done;
    expect(code).toBe(0);
    expect(stdout).toBe('Not written.\n');
    expect(existsSync(path.join(dir, 'x.txt'))).toBe(false);
    expect(toolMessages(server.requests[n + 1]!)[0]).toMatch(/refused by the user/);
  });

  it('one-shot with no stdin: the end of input refuses', async () => {
    const dir = tempFolder();
    const n = server.requests.length;
    server.enqueue(writeCall, textStream('Not written.'));
    const { code } = await runBin([...endpoint(), '--confirm', 'write x.txt'], dir).done;
    expect(code).toBe(0);
    expect(existsSync(path.join(dir, 'x.txt'))).toBe(false);
    expect(toolMessages(server.requests[n + 1]!)[0]).toMatch(/refused by the user/);
  });

  it('--help documents --interactive and --confirm', async () => {
    const { code, stdout } = await runBin(['--help'], tempFolder()).done;
    expect(code).toBe(0);
    expect(stdout).toMatch(/--interactive/);
    expect(stdout).toMatch(/--confirm/);
    expect(stdout).toMatch(/allow\? \[y\/N\]/);
  });
});

describe('interactive pieces, in-process', () => {
  it('parseCli: the prompt loop needs a terminal; piped stdin without a task is piped tasks', () => {
    const opts = (argv: string[], tty: boolean) => {
      const command = parseCli(argv, {}, tty);
      if (command.kind !== 'run') throw new Error('not a run');
      return command.options;
    };
    expect(() => opts(['--interactive'], false)).toThrow(UsageError);
    const first = ['-i', '--confirm', 'first'];
    expect(opts(first, true)).toMatchObject({ mode: 'interactive', task: 'first', confirm: true });
    expect(() => opts(first, false)).toThrow('option --interactive needs a terminal');
    expect(opts([], false)).toMatchObject({ mode: 'script', task: '', confirm: false });
    expect(opts([], true)).toMatchObject({ mode: 'interactive', task: '' });
    expect(opts(['do it'], true)).toMatchObject({ mode: 'once', task: 'do it' });
    expect(() => parseCli(['--confirm'], {}, false)).toThrow(UsageError);
  });

  it('isYes: y or yes (any case) allows; anything else, or the end of input, refuses', () => {
    expect(['y', 'Y', 'yes', ' YES '].map(isYes)).toEqual([true, true, true, true]);
    expect(['', 'n', 'no', 'yep', 'y y', undefined].map(isYes)).toEqual([false, false, false, false, false, false]);
  });

  it('the renderer shows injected steering and a call that never started (denied by a hook)', () => {
    const out = { isTTY: true, text: '', write: (t: string) => void (out.text += t) };
    const err = { text: '', write: (t: string) => void (err.text += t) };
    const r = new TerminalRenderer(out, err, () => 0);
    const ev = (e: Record<string, unknown>) => ({ runId: 'r', seq: 0, turn: 1, at: 0, ...e }) as RunEvent;
    r.on(ev({ type: 'text_delta', delta: 'Working' }));
    r.on(ev({ type: 'user_message_injected', id: 't1', content: 'be brief' }));
    r.on(
      ev({
        type: 'tool_call_failed',
        callId: 'c',
        name: 'write_file',
        error: { name: 'ToolCallDenied', message: 'the call was denied: refused by the user' },
        interrupted: false,
      }),
    );
    expect(out.text).toBe('Working\n');
    expect(err.text).toBe(
      '[injected] be brief\n[tool] write_file · failed: the call was denied: refused by the user\n',
    );
  });
});

describe('the prompt loop after the end of input, in-process', () => {
  it('Ctrl-D while a run works, then Ctrl-C: the run is cancelled and the loop exits 130, not 0', async () => {
    const command = parseCli(['--no-save', '-i', 'say hello'], {}, true);
    if (command.kind !== 'run') throw new Error('not a run');
    const provider = scriptedModel([{ hold: NEVER, text: ['never shown'] }]);
    const model = { provider, label: 'scripted', baseURL: 'http://127.0.0.1', close: async () => undefined };
    const out = { isTTY: false, text: '', write: (t: string) => void (out.text += t) };
    const err = { isTTY: false, text: '', write: (t: string) => void (err.text += t) };
    const stdin = new PassThrough();
    const stops = new StopSignals();
    const session = new MemorySession();
    const conversation = {
      session,
      note: 'conversation in memory',
      saved: false,
      hold: <T>(_: unknown, body: () => Promise<T>) => body(),
      close: async () => undefined,
    };
    const exit = (code: number): never => {
      throw new Error(`exit ${code}`);
    };
    try {
      const loop = new InteractiveLoop(
        command.options,
        model,
        { stdout: out, stderr: err, stdin, exit, stops },
        conversation,
      );
      await waitFor('the model request', () => provider.requests.length === 1);
      stdin.end(); // Ctrl-D
      await waitFor('the end of input', () => err.text.includes('end of input: exiting when this run ends'));
      stops.raise('SIGINT'); // Ctrl-C: readline is closed, so it comes as the process's signal
      expect(await loop.done).toBe(130);
      expect(err.text).toMatch(/\[loopctl\] cancelled/);
      expect(out.text).not.toContain('never shown');
      expect(session.items).toEqual([]);
    } finally {
      stops.dispose();
    }
  });
});
