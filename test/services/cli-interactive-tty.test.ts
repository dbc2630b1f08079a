/**
 * The prompt loop (`loopctl` with no task on a terminal) on a real
 * pseudo-terminal (util-linux `script`), against the local OpenAI-compatible
 * test server: steering, Ctrl-C, /cancel, /quit, --confirm, an unknown
 * /command, and typed input that never lands inside the streamed
 * answer. Every wait is for an output marker or a request, never a sleep.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  chatChunk,
  sseData,
  startOpenAIServer,
  textStream,
  toolCallsStream,
  type OpenAIServer,
  type RecordedRequest,
} from '../support/openai-server.js';
import {
  ensureBuilt,
  occurrences,
  removeTempFolders,
  runBinInPty,
  tempFolder,
  waitFor,
  type PtyChild,
} from '../cli-helpers.js';

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

/** The prompt loop on a terminal, once its hint is out (its handlers are installed by then). */
async function interactive(cwd: string, ...args: string[]): Promise<PtyChild> {
  const cli = runBinInPty([...endpoint(), ...args], cwd);
  await waitFor('the interactive hint', () => cli.screen().includes('[loopctl] interactive:'));
  return cli;
}

const send = (cli: PtyChild, line: string) => cli.type(`${line}\r`);
const summaries = (cli: PtyChild, kind: 'completed' | 'cancelled', n: number) =>
  waitFor(`${n} × ${kind}`, () => occurrences(cli.screen(), `[loopctl] ${kind}`) >= n);

async function quit(cli: PtyChild) {
  send(cli, '/quit');
  const result = await cli.done;
  expect(result.code, result.screen).toBe(0);
  return result;
}

/** The conversation a request sent, without the system message. */
const conversation = (req: RecordedRequest) =>
  req.body.messages
    .filter((m: any) => m.role !== 'system')
    .map((m: any) =>
      m.role === 'tool'
        ? { role: 'tool', content: m.content }
        : m.tool_calls
          ? { role: 'assistant', calls: m.tool_calls.map((c: any) => c.function.name) }
          : { role: m.role, content: m.content },
    );
const user = (content: string) => ({ role: 'user', content });
const assistant = (content: string) => ({ role: 'assistant', content });
const closedSoon = (req: RecordedRequest) =>
  Promise.race([req.whenClosed.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 5000))]);
const gate = () => {
  let release!: () => void;
  const opened = new Promise<void>((resolve) => (release = resolve));
  return { opened, release };
};

describe('the prompt loop on a terminal', () => {
  it('a line typed while the model request stalls is queued, then injected into the next model request', async () => {
    const dir = tempFolder({ 'notes.txt': 'alpha\n' });
    const n = server.requests.length;
    const held = gate();
    server.enqueue(
      async () => (await held.opened, toolCallsStream([{ id: 'call_1', name: 'list_dir', args: { path: '.' } }])),
      textStream('Found notes.txt.'),
    );
    const cli = await interactive(dir);
    send(cli, 'look around');
    await server.request(n); // the run is in its first model request, which the server holds
    send(cli, 'focus on notes.txt');
    await waitFor('[queued]', () => cli.screen().includes('[queued] focus on notes.txt'));
    held.release();
    await summaries(cli, 'completed', 1);
    expect(conversation(server.requests[n]!)).toEqual([user('look around')]);
    expect(conversation(server.requests[n + 1]!)).toEqual([
      user('look around'),
      { role: 'assistant', calls: ['list_dir'] },
      { role: 'tool', content: expect.stringContaining('notes.txt') },
      user('focus on notes.txt'),
    ]);
    const { screen } = await quit(cli);
    expect(screen).toMatch(/\[queued\] focus on notes\.txt\n(.|\n)*\[injected\] focus on notes\.txt\n/);
    expect(screen).toContain('Found notes.txt.');
  });

  it('Ctrl-C mid-stream cancels that run only; missed steering is kept; only completed runs are kept', async () => {
    const n = server.requests.length;
    server.enqueue({ sse: [sseData(chatChunk({ role: 'assistant', content: 'PARTIAL-ANSWER' }))], hold: true });
    const cli = await interactive(tempFolder());
    send(cli, 'first task');
    const first = await server.request(n);
    await waitFor('the partial answer', () => cli.screen().includes('PARTIAL-ANSWER'));
    send(cli, 'steer while streaming');
    await waitFor('[queued]', () => cli.screen().includes('[queued] steer while streaming'));
    cli.type('\x03');
    await summaries(cli, 'cancelled', 1);
    expect(cli.screen()).toMatch(/\[loopctl\] cancelled \(reason: SIGINT, phase: model_stream\)/);
    await waitFor('[kept for next run]', () => cli.screen().includes('[kept for next run] steer while streaming'));
    expect(await closedSoon(first)).toBe(true);

    server.enqueue(textStream('second answer'));
    send(cli, 'second task');
    await summaries(cli, 'completed', 1);
    // The cancelled run left nothing behind; its steering goes to the next run, ahead of that run's input
    // ("arrival order": it was typed before "second task").
    expect(conversation(server.requests[n + 1]!)).toEqual([user('steer while streaming'), user('second task')]);
    server.enqueue(textStream('third answer'));
    send(cli, 'third task');
    await summaries(cli, 'completed', 2);
    expect(conversation(server.requests[n + 2]!)).toEqual([
      user('steer while streaming'),
      user('second task'),
      assistant('second answer'),
      user('third task'),
    ]);
    const { screen } = await quit(cli);
    expect(occurrences(screen, '[loopctl] cancelled')).toBe(1);
    expect(server.requests.length).toBe(n + 3);
  });

  it('/cancel cancels the live run; Ctrl-C at an idle prompt cancels nothing and says how to quit', async () => {
    const n = server.requests.length;
    server.enqueue({ stall: true });
    const cli = await interactive(tempFolder());
    send(cli, 'wait forever');
    await server.request(n);
    send(cli, '/cancel');
    await summaries(cli, 'cancelled', 1);
    expect(cli.screen()).toMatch(/\[loopctl\] cancelled \(reason: \/cancel, phase: model_(stream|request)\)/);
    cli.type('\x03'); // idle now
    await waitFor('the idle hint', () => cli.screen().includes('no run to cancel: /quit or Ctrl-D exits'));
    server.enqueue(textStream('fine'));
    send(cli, 'next task');
    await summaries(cli, 'completed', 1);
    const { screen } = await quit(cli);
    expect(occurrences(screen, '[loopctl] cancelled')).toBe(1);
  });

  it('/quit exits 0, cancelling a live run first; Ctrl-C twice within 2 s exits 130', async () => {
    const n = server.requests.length;
    server.enqueue({ stall: true });
    const cli = await interactive(tempFolder());
    send(cli, 'wait forever');
    const req = await server.request(n);
    const { screen } = await quit(cli);
    expect(screen).toMatch(/\[loopctl\] cancelled \(reason: \/quit, phase: model_(stream|request)\)/);
    expect(await closedSoon(req)).toBe(true);

    const twice = await interactive(tempFolder());
    twice.type('\x03');
    await waitFor('the idle hint', () => twice.screen().includes('no run to cancel'));
    twice.type('\x03');
    expect((await twice.done).code).toBe(130);
  });

  it('an unknown /command is refused with the list of commands, and never sent to the model', async () => {
    const n = server.requests.length;
    const cli = await interactive(tempFolder());
    send(cli, '/quti');
    const refusal = '[loopctl] unknown command /quti: the commands are /cancel, /drop, /quit, /exit, /help';
    await waitFor('the refusal', () => cli.screen().includes(refusal));
    server.enqueue(textStream('it is a path'));
    send(cli, '/etc/hosts: what is this file?'); // a path is a task, not a command
    await summaries(cli, 'completed', 1);
    expect(conversation(server.requests[n]!)).toEqual([user('/etc/hosts: what is this file?')]);
    await quit(cli);
    expect(server.requests.length).toBe(n + 1);
  });

  it('typed input never lands in the streamed answer; it shows with the prompt once the run ends', async () => {
    const n = server.requests.length;
    server.enqueue({ sse: [sseData(chatChunk({ role: 'assistant', content: 'FIRST-HALF' }))], hold: true });
    const cli = await interactive(tempFolder());
    send(cli, 'talk');
    const first = await server.request(n);
    await waitFor('the first half', () => cli.screen().includes('FIRST-HALF'));
    cli.type('typed-ahead'); // no Enter: still being typed
    cli.type('\x03'); // ends the run; what was typed stays in the line being edited
    await summaries(cli, 'cancelled', 1);
    expect(await closedSoon(first)).toBe(true);
    const answerLine = cli
      .screen()
      .split('\n')
      .find((l) => l.includes('FIRST-HALF'))!;
    expect(answerLine).not.toContain('typed-ahead');
    await waitFor('the prompt with the typed text', () => /> typed-ahead/.test(cli.screen()));
    server.enqueue(textStream('ok'));
    cli.type('\r');
    await summaries(cli, 'completed', 1);
    expect(conversation(server.requests[n + 1]!)).toEqual([user('typed-ahead')]);
    await quit(cli);
  });
});

describe('a task given with -i on a terminal', () => {
  it('runs first; Ctrl-D during it waits for the run, then exits 0', async () => {
    const n = server.requests.length;
    const held = gate();
    server.enqueue(async () => (await held.opened, textStream('hello there')));
    const cli = runBinInPty([...endpoint(), '-i', 'say hello'], tempFolder());
    await server.request(n);
    cli.type('\x04');
    await waitFor('the end of input to be seen', () =>
      cli.screen().includes('end of input: exiting when this run ends'),
    );
    held.release();
    const { code, screen } = await cli.done;
    expect(code).toBe(0);
    expect(screen).toContain('hello there');
    expect(conversation(server.requests[n]!)).toEqual([user('say hello')]);
  });

  it('Ctrl-D during it, then Ctrl-C: the run is cancelled and the exit code is 130, not 0', async () => {
    const n = server.requests.length;
    const held = gate();
    server.enqueue(async () => (await held.opened, textStream('never shown')));
    const cli = runBinInPty([...endpoint(), '-i', 'say hello'], tempFolder());
    await server.request(n);
    cli.type('\x04');
    await waitFor('the end of input to be seen', () =>
      cli.screen().includes('end of input: exiting when this run ends'),
    );
    cli.type('\x03'); // readline is closed: the terminal sends the process a SIGINT
    const { code, screen } = await cli.done;
    held.release();
    expect(code, screen).toBe(130);
    expect(screen).toContain('[loopctl] cancelled');
    expect(screen).not.toContain('never shown');
  });
});

describe('--confirm in the prompt loop', () => {
  const writeCall = toolCallsStream([{ id: 'call_w', name: 'write_file', args: { path: 'x.txt', content: 'hi' } }]);
  const toolMessages = (req: RecordedRequest): string[] =>
    req.body.messages.filter((m: any) => m.role === 'tool').map((m: any) => m.content);

  it('a refused write does not happen and the model gets the refusal; "y" allows the next one', async () => {
    const dir = tempFolder();
    const n = server.requests.length;
    server.enqueue(writeCall, textStream('I did not write it.'), writeCall, textStream('Written.'));
    const cli = await interactive(dir, '--confirm');
    send(cli, 'write x.txt');
    await waitFor('the question', () => cli.screen().includes('allow? [y/N]'));
    expect(cli.screen()).toContain('[confirm] write_file path: x.txt, content: hi');
    send(cli, 'n');
    await summaries(cli, 'completed', 1);
    expect(existsSync(path.join(dir, 'x.txt'))).toBe(false);
    expect(toolMessages(server.requests[n + 1]!)[0]).toMatch(/refused by the user/);
    send(cli, 'write it now');
    await waitFor('the second question', () => occurrences(cli.screen(), 'allow? [y/N]') >= 2);
    send(cli, 'y');
    await summaries(cli, 'completed', 2);
    expect(readFileSync(path.join(dir, 'x.txt'), 'utf8')).toBe('hi');
    const { screen } = await quit(cli);
    expect(screen).toMatch(/\[tool\] write_file · rejected: .*refused by the user/);
  });
});
