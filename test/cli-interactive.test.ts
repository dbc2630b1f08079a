/**
 * `loopctl --interactive` and `--confirm`: the built bin as a child process
 * with piped stdin, against the local OpenAI-compatible test server. Every
 * wait is for an output marker or a request, never a sleep.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatChunk, sseData, startOpenAIServer, textStream, toolCallsStream, type OpenAIServer, type RecordedRequest } from './support/openai-server.js';
import { parseCli, UsageError } from '../src/cli/args.js';
import { isYes } from '../src/cli/confirm.js';
import { TerminalRenderer } from '../src/cli/render.js';
import type { RunEvent } from '../src/events.js';
import { ensureBuilt, occurrences, removeTempFolders, runBin, tempFolder, waitFor, type CliChild } from './cli-helpers.js';

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

/** `loopctl --interactive` with a piped stdin, once its header is out (its signal handlers are installed by then). */
async function interactive(cwd: string, ...args: string[]): Promise<CliChild> {
  const cli = runBin([...endpoint(), '--interactive', ...args], cwd, undefined, 'pipe');
  await waitFor('the interactive header', () => cli.stderr().includes('[loopctl] interactive:'));
  return cli;
}

/** Waits until the CLI has printed `n` run summaries of the given kind. */
const summaries = (cli: CliChild, kind: 'completed' | 'cancelled', n: number) =>
  waitFor(`${n} × ${kind}`, () => occurrences(cli.stderr(), `[loopctl] ${kind}`) >= n);

async function quit(cli: CliChild) {
  cli.send('/quit');
  const result = await cli.done;
  expect(result.code, result.stderr).toBe(0);
  return result;
}


/** The conversation a request sent, without the system message. */
const conversation = (req: RecordedRequest) =>
  req.body.messages.filter((m: any) => m.role !== 'system').map((m: any) => (m.role === 'tool' ? { role: 'tool', content: m.content } : m.tool_calls ? { role: 'assistant', calls: m.tool_calls.map((c: any) => c.function.name) } : { role: m.role, content: m.content }));
const user = (content: string) => ({ role: 'user', content });
const assistant = (content: string) => ({ role: 'assistant', content });
const closedSoon = (req: RecordedRequest) => Promise.race([req.whenClosed.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 5000))]);

describe('loopctl --interactive', () => {
  it('a line typed while the model request stalls is queued, then injected into the next model request', async () => {
    const dir = tempFolder({ 'notes.txt': 'alpha\n' });
    const n = server.requests.length;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    server.enqueue(async () => (await gate, toolCallsStream([{ id: 'call_1', name: 'list_dir', args: { path: '.' } }])), textStream('Found notes.txt.'));
    const cli = await interactive(dir);
    cli.send('look around');
    await server.request(n); // the run is in its first model request, which the server holds
    cli.send('focus on notes.txt');
    await waitFor('[queued]', () => cli.stderr().includes('[queued] focus on notes.txt'));
    release();
    await summaries(cli, 'completed', 1);
    expect(conversation(server.requests[n]!)).toEqual([user('look around')]);
    expect(conversation(server.requests[n + 1]!)).toEqual([
      user('look around'),
      { role: 'assistant', calls: ['list_dir'] },
      { role: 'tool', content: expect.stringContaining('notes.txt') },
      user('focus on notes.txt'),
    ]);
    const { stdout, stderr } = await quit(cli);
    expect(stderr).toMatch(/\[queued\] focus on notes\.txt\n(.|\n)*\[injected\] focus on notes\.txt\n/);
    expect(stdout).toContain('Found notes.txt.');
  });

  it('SIGINT mid-stream cancels only that run; the process stays up, steering it missed is kept, and the conversation holds completed runs only', async () => {
    const n = server.requests.length;
    server.enqueue({ sse: [sseData(chatChunk({ role: 'assistant', content: 'PARTIAL-ANSWER' }))], hold: true });
    const cli = await interactive(tempFolder());
    cli.send('first task');
    const first = await server.request(n);
    await waitFor('the partial answer', () => cli.stdout().includes('PARTIAL-ANSWER'));
    cli.send('steer while streaming');
    await waitFor('[queued]', () => cli.stderr().includes('[queued] steer while streaming'));
    cli.child.kill('SIGINT');
    await summaries(cli, 'cancelled', 1);
    expect(cli.stderr()).toMatch(/\[loopctl\] cancelled \(reason: SIGINT, phase: model_stream\)/);
    await waitFor('[kept for next run]', () => cli.stderr().includes('[kept for next run] steer while streaming'));
    expect(await closedSoon(first)).toBe(true);

    server.enqueue(textStream('second answer'));
    cli.send('second task');
    await summaries(cli, 'completed', 1);
    // The cancelled run left nothing behind; its steering went to the next run, ahead of that run's input
    // (arrival order: it was typed before "second task").
    expect(conversation(server.requests[n + 1]!)).toEqual([user('steer while streaming'), user('second task')]);

    server.enqueue(textStream('third answer'));
    cli.send('third task');
    await summaries(cli, 'completed', 2);
    expect(conversation(server.requests[n + 2]!)).toEqual([
      user('steer while streaming'), user('second task'), assistant('second answer'), user('third task'),
    ]);
    expect(JSON.stringify(server.requests[n + 2]!.body)).not.toMatch(/first task|PARTIAL-ANSWER/);

    const { stderr } = await quit(cli);
    expect(occurrences(stderr, '[loopctl] cancelled')).toBe(1);
    expect(stderr).toContain('[injected] steer while streaming');
    expect(server.requests.length).toBe(n + 3);
  });

  it('/cancel cancels the live run, and Ctrl-C at an idle prompt cancels nothing and says how to quit', async () => {
    const n = server.requests.length;
    server.enqueue({ stall: true });
    const cli = await interactive(tempFolder());
    cli.send('wait forever');
    await server.request(n);
    cli.send('/cancel');
    await summaries(cli, 'cancelled', 1);
    expect(cli.stderr()).toMatch(/\[loopctl\] cancelled \(reason: \/cancel, phase: model_(stream|request)\)/);
    cli.child.kill('SIGINT'); // idle now
    await waitFor('the idle hint', () => cli.stderr().includes('no run to cancel: /quit or Ctrl-D exits'));
    server.enqueue(textStream('fine'));
    cli.send('next task');
    await summaries(cli, 'completed', 1); // the idle Ctrl-C did not cancel the next run
    const { stderr } = await quit(cli);
    expect(occurrences(stderr, '[loopctl] cancelled')).toBe(1);
  });

  it('/quit exits 0, cancelling a live run first', async () => {
    const n = server.requests.length;
    server.enqueue({ stall: true });
    const cli = await interactive(tempFolder());
    cli.send('wait forever');
    const req = await server.request(n);
    const { stderr } = await quit(cli);
    expect(stderr).toMatch(/\[loopctl\] cancelled \(reason: \/quit, phase: model_(stream|request)\)/);
    expect(await closedSoon(req)).toBe(true);
  });

  it('Ctrl-C twice within 2 s exits 130', async () => {
    const cli = await interactive(tempFolder());
    cli.child.kill('SIGINT');
    await waitFor('the idle hint', () => cli.stderr().includes('no run to cancel'));
    cli.child.kill('SIGINT');
    expect((await cli.done).code).toBe(130);
  });

  it('a task given with --interactive runs first; the end of input waits for the live run, then exits 0', async () => {
    const n = server.requests.length;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    server.enqueue(async () => (await gate, textStream('hello there')));
    const cli = await interactive(tempFolder(), 'say hello');
    await server.request(n);
    cli.child.stdin!.end();
    await waitFor('the end of input to be seen', () => cli.stderr().includes('end of input: exiting when this run ends'));
    release();
    const { code, stdout, stderr } = await cli.done;
    expect(code).toBe(0);
    expect(stdout).toContain('hello there');
    expect(stderr).toContain('[loopctl] completed');
    expect(conversation(server.requests[n]!)).toEqual([user('say hello')]);
  });
});

describe('loopctl --confirm', () => {
  const writeCall = toolCallsStream([{ id: 'call_w', name: 'write_file', args: { path: 'x.txt', content: 'hi' } }]);
  const toolMessages = (req: RecordedRequest): string[] => req.body.messages.filter((m: any) => m.role === 'tool').map((m: any) => m.content);

  it('interactive: a refused write does not happen, and the model gets the refusal as a tool error', async () => {
    const dir = tempFolder();
    const n = server.requests.length;
    server.enqueue(writeCall, textStream('I did not write it.'));
    const cli = await interactive(dir, '--confirm');
    cli.send('write x.txt');
    await waitFor('the question', () => cli.stderr().includes('allow? [y/N]'));
    expect(cli.stderr()).toContain('[confirm] write_file {"path":"x.txt","content":"hi"}');
    cli.send('n'); // the answer, not steering
    await summaries(cli, 'completed', 1);
    expect(existsSync(path.join(dir, 'x.txt'))).toBe(false);
    const [refusal] = toolMessages(server.requests[n + 1]!);
    expect(refusal).toMatch(/refused by the user/);
    expect(conversation(server.requests[n + 1]!).filter((m: any) => m.role === 'user')).toEqual([user('write x.txt')]);
    const { stderr } = await quit(cli);
    expect(stderr).toMatch(/\[tool\] write_file · failed: .*refused by the user/);
  });

  it('interactive: "y" allows the write', async () => {
    const dir = tempFolder();
    const n = server.requests.length;
    server.enqueue(writeCall, textStream('Written.'));
    const cli = await interactive(dir, '--confirm');
    cli.send('write x.txt');
    await waitFor('the question', () => cli.stderr().includes('allow? [y/N]'));
    cli.send('y');
    await summaries(cli, 'completed', 1);
    expect(readFileSync(path.join(dir, 'x.txt'), 'utf8')).toBe('hi');
    expect(toolMessages(server.requests[n + 1]!)[0]).not.toMatch(/refused/);
    await quit(cli);
  });

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
  it('parseCli: --interactive (a task optional), no task on a TTY, and no task off a TTY is a usage error', () => {
    const opts = (argv: string[], tty: boolean) => {
      const command = parseCli(argv, {}, tty);
      if (command.kind !== 'run') throw new Error('not a run');
      return command.options;
    };
    expect(opts(['--interactive'], false)).toMatchObject({ interactive: true, task: '', confirm: false });
    expect(opts(['-i', '--confirm', 'first'], false)).toMatchObject({ interactive: true, task: 'first', confirm: true });
    expect(opts([], true)).toMatchObject({ interactive: true, task: '' });
    expect(opts(['do it'], true)).toMatchObject({ interactive: false, task: 'do it' });
    expect(() => parseCli([], {}, false)).toThrow(UsageError);
  });

  it('isYes: y or yes (any case) allows; anything else, or the end of input, refuses', () => {
    expect(['y', 'Y', 'yes', ' YES '].map(isYes)).toEqual([true, true, true, true]);
    expect(['', 'n', 'no', 'yep', 'y y', undefined].map(isYes)).toEqual([false, false, false, false, false, false]);
  });

  it('the renderer shows injected steering and a call that never started (denied by a hook)', () => {
    const out = { text: '', write: (t: string) => void (out.text += t) };
    const err = { text: '', write: (t: string) => void (err.text += t) };
    const r = new TerminalRenderer(out, err, () => 0);
    const ev = (e: Record<string, unknown>) => ({ runId: 'r', seq: 0, turn: 1, at: 0, ...e }) as RunEvent;
    r.on(ev({ type: 'text_delta', delta: 'Working' }));
    r.on(ev({ type: 'user_message_injected', id: 't1', content: 'be brief' }));
    r.on(ev({ type: 'tool_call_failed', callId: 'c', name: 'write_file', error: { name: 'ToolCallDenied', message: 'the call was denied: refused by the user' }, interrupted: false }));
    expect(out.text).toBe('Working\n');
    expect(err.text).toBe('[injected] be brief\n[tool] write_file · failed: the call was denied: refused by the user\n');
  });
});
