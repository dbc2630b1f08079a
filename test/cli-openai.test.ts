/**
 * The `loopctl` bin, built (`node dist/cli/main.js`, no tsx), as a child
 * process against the local OpenAI-compatible test server.
 */
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  readFixture,
  sseFrames,
  startOpenAIServer,
  textStream,
  toolCallsStream,
  type OpenAIServer,
  type RecordedRequest,
} from './support/openai-server.js';
import {
  cliEnv,
  ensureBuilt,
  groupGone,
  killGroup,
  liveGroupMembers,
  occurrences,
  removeTempFolders,
  runBin,
  tempFolder,
  waitFor,
} from './cli-helpers.js';
import { runMain } from './support/cli-main.js';

let server: OpenAIServer;
beforeAll(async () => {
  server = await startOpenAIServer();
  await ensureBuilt();
}, 180_000);
afterAll(async () => {
  removeTempFolders();
  await server?.close();
});

const bin = (cwd: string, ...args: string[]) =>
  runBin(['--base-url', server.baseURL, '--api-key', 'test', '--model', 'test-model', ...args], cwd);

/** A streamed answer making the given tool calls. */

/** The text of a recorded Chat Completions stream. */
function fixtureText(name: string): string {
  return sseFrames(readFixture(name))
    .map((f) => f.replace(/^data: /, '').trim())
    .filter((f) => f !== '[DONE]')
    .map((f) => JSON.parse(f).choices?.[0]?.delta?.content ?? '')
    .join('');
}

const toolNames = (req: RecordedRequest): string[] => (req.body.tools ?? []).map((t: any) => t.function.name);
const toolMessages = (req: RecordedRequest): string[] =>
  req.body.messages.filter((m: any) => m.role === 'tool').map((m: any) => m.content);
const closedSoon = (req: RecordedRequest) =>
  Promise.race([req.whenClosed.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 5000))]);

describe('loopctl against an OpenAI-compatible server', () => {
  it('makes a tool call on a real folder and finishes with the right output', async () => {
    const dir = tempFolder({ 'notes.txt': 'alpha\nbeta\n' });
    const n = server.requests.length;
    server.enqueue(toolCallsStream([{ id: 'call_1', name: 'read_file', args: { path: 'notes.txt' } }]), {
      fixture: 'chat-text-basic.sse',
    });
    const { code, stdout, stderr } = await bin(dir, 'read notes.txt').done;
    expect(code).toBe(0);
    expect(stdout).toBe(`${fixtureText('chat-text-basic.sse')}\n`);
    const first = server.requests[n]!;
    expect(first.body.messages.at(-1)).toEqual({ role: 'user', content: 'read notes.txt' });
    expect(toolNames(first)).toEqual(['list_dir', 'read_file', 'search_files', 'write_file']);
    expect(toolMessages(server.requests[n + 1]!)).toEqual(['alpha\nbeta\n']);
    expect(stderr).toMatch(/\[tool\] read_file path: notes\.txt · \d+\.\ds · ok/);
    // chat-text-basic.sse reports no usage: the total counts the first response only.
    expect(stderr).toMatch(
      /\[loopctl\] completed · 2 turns · 1 tool call · usage unknown \(at least \d+ in \+ \d+ out = \d+ tokens\)/,
    );
  });

  it('--responses speaks the Responses API (a recorded stream)', async () => {
    const n = server.requests.length;
    server.enqueue({ fixture: 'responses-text.sse' });
    const { code, stdout, stderr } = await bin(tempFolder(), '--responses', 'what is 2 + 2?').done;
    expect(code, stderr).toBe(0);
    expect(stdout).toBe('2 + 2 = 4.\n');
    expect(server.requests[n]!.path).toBe('/v1/responses');
    expect(stderr).toContain('test-model (Responses API at');
  });

  it('a model error fails the run: exit 1 with the error on stderr', async () => {
    server.enqueue({ errorFixture: 'error-401.json', status: 401 });
    const { code, stdout, stderr } = await bin(tempFolder(), 'hello').done;
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/\[loopctl\] failed \(model_error\): 401 /);
  });

  it('SIGINT mid-stream: cancelled, exit 130, the server sees the socket close', async () => {
    const dir = tempFolder();
    const n = server.requests.length;
    server.enqueue({ stall: true });
    const run = bin(dir, 'take your time');
    const req = await server.request(n);
    await waitFor('the CLI header', () => run.stderr().includes('tools:'));
    run.child.kill('SIGINT');
    const { code, stderr } = await run.done;
    expect(code).toBe(130);
    expect(stderr).toMatch(
      /\[loopctl\] cancelled \(reason: SIGINT, phase: model_(stream|request)\) · 1 turn · 0 tool calls/,
    );
    expect(await closedSoon(req)).toBe(true);
    expect(req.finished).toBe(false);
  });

  it('--read-only offers no write_file tool, and a write the model asks for anyway is refused', async () => {
    const dir = tempFolder();
    const n = server.requests.length;
    server.enqueue(
      toolCallsStream([{ id: 'call_w', name: 'write_file', args: { path: 'x.txt', content: 'hi' } }]),
      textStream('ok'),
    );
    const { code, stdout } = await bin(dir, '--read-only', 'write x.txt').done;
    expect(code).toBe(0);
    expect(stdout).toBe('ok\n');
    expect(toolNames(server.requests[n]!)).toEqual(['list_dir', 'read_file', 'search_files']);
    const [refusal] = toolMessages(server.requests[n + 1]!);
    expect(refusal).toMatch(/^Error: .*write_file/);
    expect(existsSync(path.join(dir, 'x.txt'))).toBe(false);
  });

  it('refuses a path outside the folder and a symlink pointing out; the tool errors reach the model', async () => {
    const parent = tempFolder({ 'outside/secret.txt': 'TOP SECRET\n' });
    const dir = path.join(parent, 'work');
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'inside.txt'), 'fine\n');
    symlinkSync(path.join(parent, 'outside/secret.txt'), path.join(dir, 'link.txt'));
    const n = server.requests.length;
    server.enqueue(
      toolCallsStream([
        { id: 'call_a', name: 'read_file', args: { path: '../outside/secret.txt' } },
        { id: 'call_b', name: 'read_file', args: { path: 'link.txt' } },
        { id: 'call_c', name: 'read_file', args: { path: 'inside.txt' } },
      ]),
      textStream('done'),
    );
    const { code, stderr } = await bin(dir, 'read everything').done;
    expect(code).toBe(0);
    const [a, b, c] = toolMessages(server.requests[n + 1]!);
    expect(a).toMatch(/^Error: path "\.\.\/outside\/secret\.txt" is outside the working folder/);
    expect(b).toMatch(/^Error: path "link\.txt" is outside the working folder/);
    expect(c).toBe('fine\n');
    expect(JSON.stringify(server.requests[n + 1]!.body)).not.toContain('TOP SECRET');
    expect(stderr).toMatch(/\[tool\] read_file path: link\.txt · \d+\.\ds · failed: path "link.txt" is outside/);
  });

  it('--allow-shell: a command cancelled mid-way leaves no process of its group', async () => {
    const dir = tempFolder();
    const n = server.requests.length;
    const command = 'sleep 30 & echo $$ > pid.txt; sleep 30';
    server.enqueue(toolCallsStream([{ id: 'call_s', name: 'run_shell', args: { command } }]));
    const run = bin(dir, '--allow-shell', 'sleep a while');
    expect(toolNames(await server.request(n))).toContain('run_shell');
    const pidFile = path.join(dir, 'pid.txt');
    const pgid = await waitFor('pid.txt', () => existsSync(pidFile) && Number(readFileSync(pidFile, 'utf8')));
    await waitFor('the shell and both sleeps', () => liveGroupMembers(pgid).length >= 3);
    run.child.kill('SIGINT');
    const { code, stderr } = await run.done;
    expect(code).toBe(130);
    expect(stderr).toMatch(/\[tool\] run_shell .* · interrupted/);
    expect(stderr).toMatch(/cancelled \(reason: SIGINT, phase: tool_call\)/);
    await waitFor('the process group to be gone', () => liveGroupMembers(pgid).length === 0);
    expect(server.requests.length).toBe(n + 1); // no request after the cancel
  });

  it('--allow-shell: Ctrl-C during a command that ignores SIGTERM: no process of its group outlives the CLI', async () => {
    const dir = tempFolder();
    const n = server.requests.length;
    const command = "trap '' TERM; echo $$ > pid.txt; sleep 30";
    server.enqueue(toolCallsStream([{ id: 'call_t', name: 'run_shell', args: { command } }]));
    const run = bin(dir, '--allow-shell', 'run it');
    await server.request(n);
    const pidFile = path.join(dir, 'pid.txt');
    const pgid = await waitFor('pid.txt', () => existsSync(pidFile) && Number(readFileSync(pidFile, 'utf8')));
    try {
      await waitFor('the shell and its sleep', () => liveGroupMembers(pgid).length >= 2);
      run.child.kill('SIGINT');
      const { code, stderr } = await run.done;
      expect(code).toBe(130);
      expect(stderr).toMatch(/cancelled \(reason: SIGINT, phase: tool_call\)/);
      // The CLI exits before the SIGTERM grace period ends: the group is SIGKILLed as the process exits.
      await waitFor('the process group to be gone', () => groupGone(pgid));
    } finally {
      killGroup(pgid);
    }
  });

  it('--confirm with the answers piped ahead: every question is shown, each answer goes to its call', async () => {
    const dir = tempFolder();
    const write = (id: string, file: string) =>
      toolCallsStream([{ id, name: 'write_file', args: { path: file, content: 'hello' } }]);
    server.enqueue(write('call_x', 'x.txt'), write('call_y', 'y.txt'), write('call_z', 'z.txt'), textStream('done'));
    const run = runBin(
      ['--base-url', server.baseURL, '--api-key', 'test', '--confirm', 'write files'],
      dir,
      undefined,
      'pipe',
    );
    run.child.stdin!.end('y\nn\n'); // z.txt: the end of input refuses
    const { code, stderr } = await run.done;
    expect(code, stderr).toBe(0);
    expect(occurrences(stderr, 'allow? [y/N]')).toBe(3);
    for (const file of ['x.txt', 'y.txt', 'z.txt'])
      expect(stderr).toMatch(
        new RegExp(`\\[confirm\\] write_file path: ${file.replace('.', '\\.')}.*\nallow\\? \\[y/N\\]\n`),
      );
    expect(existsSync(path.join(dir, 'x.txt'))).toBe(true);
    expect(existsSync(path.join(dir, 'y.txt'))).toBe(false);
    expect(existsSync(path.join(dir, 'z.txt'))).toBe(false);
  });

  it('two SIGINTs in a row: exit 130 (the second one exits at once, or kills the process if the run already ended)', async () => {
    const dir = tempFolder();
    const n = server.requests.length;
    server.enqueue({ stall: true });
    const run = bin(dir, 'wait');
    await server.request(n);
    await waitFor('the CLI header', () => run.stderr().includes('tools:'));
    run.child.kill('SIGINT');
    run.child.kill('SIGINT');
    const { code } = await run.done;
    expect(code).toBe(130);
  });
});

describe('loopctl options', () => {
  it.each([
    [['--bogus', 'x'], /--bogus/],
    [['--max-turns', 'zero', 'x'], /--max-turns must be a positive integer/],
    [['--model'], /--model/],
    [['--cwd', '/definitely/not/here', 'x'], /--cwd/],
    [['--read-only', '--allow-shell', 'x'], /--allow-shell and --read-only/],
    [['--base-url', 'localhost:1234', 'x'], /--base-url must be an http/],
    [[], /no task: give one as an argument, or pipe one task per line/],
  ])('%j → exit 2 with a message naming the option', async (args, message) => {
    const { code, stderr, stdout } = await runMain(args);
    expect(code).toBe(2);
    expect(stderr).toMatch(message);
    expect(stdout).toBe('');
  });

  it('the bin exits 2 on a bad option, with the message on stderr', async () => {
    const { code, stderr, stdout } = await runBin(['--max-turns', 'zero', 'x'], tempFolder()).done;
    expect({ code, stdout }).toEqual({ code: 2, stdout: '' });
    expect(stderr).toMatch(/^loopctl: option --max-turns must be a positive integer/);
  });

  it('OPENAI_BASE_URL is checked like --base-url: exit 2 naming it; --base-url overrides it', async () => {
    const env = { ...cliEnv(), OPENAI_BASE_URL: 'localhost:11434/v1' };
    const bad = await runBin(['hello'], tempFolder(), env).done;
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^loopctl: OPENAI_BASE_URL must be an http\(s\) URL \(got "localhost:11434\/v1"\)/);
    expect(bad.stdout).toBe('');
    server.enqueue(textStream('ok'));
    const overridden = await runBin(['--base-url', server.baseURL, 'hello'], tempFolder(), env).done;
    expect(overridden.code, overridden.stderr).toBe(0);
    expect(overridden.stdout).toBe('ok\n');
  });

  it('--help and --version exit 0', async () => {
    const help = await runBin(['--help'], tempFolder()).done;
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: loopctl [options] "task"');
    for (const option of [
      '--model',
      '--base-url',
      '--api-key',
      '--responses',
      '--allow-shell',
      '--read-only',
      '--max-turns',
      '--cwd',
    ])
      expect(help.stdout).toContain(option);
    const pkg = JSON.parse(readFileSync(path.join(import.meta.dirname, '../package.json'), 'utf8'));
    const version = await runBin(['--version'], tempFolder()).done;
    expect(version).toMatchObject({ code: 0, stdout: `loopctl ${pkg.version}\n` });
  });
});
