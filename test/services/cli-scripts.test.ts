/**
 * Piped input is a script, not steering. Each non-empty line of stdin
 * is a task, run in order on one conversation; a failed line does not stop
 * the later ones; the exit code is the last run's; SIGINT or SIGTERM ends
 * the whole session. `--json` writes only NDJSON on stdout. And the exit
 * code of every terminal kind, with piped and with terminal input.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunEventSchema } from '../../src/index.js';
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
  BIN,
  cliEnv,
  ensureBuilt,
  removeTempFolders,
  runBin,
  runInPty,
  tempFolder,
  waitFor,
  type CliChild,
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
const unauthorized = {
  json: { error: { message: 'Incorrect API key provided', type: 'invalid_request_error' } },
  status: 401,
};

/** The CLI with `lines` piped on stdin (stdin stays open when `keepOpen`). */
function piped(lines: string, args: string[] = [], keepOpen = false): CliChild {
  const cli = runBin([...endpoint(), ...args], tempFolder(), undefined, 'pipe');
  cli.child.stdin!.write(lines);
  if (!keepOpen) cli.child.stdin!.end();
  return cli;
}

const userTurns = (req: RecordedRequest) =>
  req.body.messages
    .filter((m: any) => m.role === 'user' || m.role === 'assistant')
    .map((m: any) => `${m.role}: ${m.content}`);

describe('piped tasks', () => {
  it('-i with piped stdin exits 2 with the refusal and runs nothing: the prompt loop needs a terminal', async () => {
    const n = server.requests.length;
    const { code, stdout, stderr } = await piped('task one\n', ['-i']).done;
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toBe(
      'loopctl: option --interactive needs a terminal: stdin is not one (without -i, piped lines are tasks)\n' +
        "Try 'loopctl --help'.\n",
    );
    expect(server.requests.length).toBe(n);
  });

  it('two piped lines are two tasks, in order, on one conversation; exit 0', async () => {
    const n = server.requests.length;
    server.enqueue(textStream('answer one'), textStream('answer two'));
    const { code, stdout, stderr } = await piped('task one\n\n   \ntask two\n').done;
    expect(code, stderr).toBe(0);
    expect(server.requests.length).toBe(n + 2);
    expect(userTurns(server.requests[n]!)).toEqual(['user: task one']);
    expect(userTurns(server.requests[n + 1]!)).toEqual(['user: task one', 'assistant: answer one', 'user: task two']);
    expect(stdout).toBe('answer one\nanswer two\n');
    expect(stderr).toContain('[loopctl] task 1: task one\n');
    expect(stderr).toContain('[loopctl] task 2: task two\n');
    expect(stderr).not.toContain('[queued]');
  });

  it("a failed line does not stop the later ones; the exit code is the last run's", async () => {
    server.enqueue(unauthorized, textStream('fine'));
    const first = await piped('will fail\nwill pass\n').done;
    expect(first.code).toBe(0);
    expect(first.stderr).toMatch(/\[loopctl\] failed \(model_error\): 401 Incorrect API key provided/);
    expect(first.stdout).toBe('fine\n');
    server.enqueue(textStream('fine'), unauthorized);
    expect((await piped('will pass\nwill fail\n').done).code).toBe(1);
  });

  it('SIGINT ends the session: the run is cancelled, no further line starts, exit 130; SIGTERM 143', async () => {
    for (const [signal, exitCode] of [
      ['SIGINT', 130],
      ['SIGTERM', 143],
    ] as const) {
      const n = server.requests.length;
      server.enqueue({ sse: [sseData(chatChunk({ role: 'assistant', content: 'slow' }))], hold: true });
      const cli = piped('slow task\nnever started\n', [], true);
      await server.request(n);
      cli.child.kill(signal);
      const { code, stderr } = await cli.done;
      expect(code).toBe(exitCode);
      expect(stderr).toContain(`[loopctl] cancelled (reason: ${signal}, phase: model_stream)`);
      expect(stderr).not.toContain('task 2');
      expect(server.requests.length).toBe(n + 1);
    }
  });

  it('a task on the command line: stdin is not read for tasks', async () => {
    const n = server.requests.length;
    server.enqueue(textStream('only this'));
    const { code, stdout } = await piped('not a task\n', ['the task']).done;
    expect(code).toBe(0);
    expect(stdout).toBe('only this\n');
    expect(server.requests.length).toBe(n + 1);
    expect(userTurns(server.requests[n]!)).toEqual(['user: the task']);
  });

  it('no line at all: exit 2 saying how to give a task', async () => {
    const { code, stderr } = await piped('\n\n').done;
    expect(code).toBe(2);
    expect(stderr).toContain('loopctl: no task: give one as an argument, or pipe one task per line on stdin');
  });

  it('--json: stdout holds only NDJSON, one valid RunEvent per line; human lines on stderr', async () => {
    const dir = tempFolder({ 'a.txt': 'alpha\n' });
    const read = toolCallsStream([{ id: 'c1', name: 'read_file', args: { path: 'a.txt' } }]);
    server.enqueue(read, textStream('read it'), unauthorized);
    const cli = runBin([...endpoint(), '--json'], dir, undefined, 'pipe');
    cli.child.stdin!.end('read a.txt\nthen fail\n');
    const { code, stdout, stderr } = await cli.done;
    expect(code).toBe(1);
    const lines = stdout.split('\n');
    expect(lines.at(-1)).toBe('');
    const events = lines.slice(0, -1).map((line) => RunEventSchema.parse(JSON.parse(line)));
    expect(events.filter((e) => e.type === 'run_started')).toHaveLength(2);
    expect(events.map((e) => e.type).filter((t) => t.startsWith('run_'))).toEqual([
      'run_started',
      'run_completed',
      'run_started',
      'run_failed',
    ]);
    expect(events.find((e) => e.type === 'tool_call_completed')).toMatchObject({
      name: 'read_file',
      output: 'alpha\n',
    });
    expect(stderr).toContain('[tool] read_file path: a.txt');
    expect(stderr).toContain('[loopctl] completed');
    expect(stderr).not.toContain('read it'); // the answer is in the events only
  });
});

/** Pid of the only child of `pid` (the CLI under `script`). */
function childOf(pid: number): number | undefined {
  try {
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
    return children === '' ? undefined : Number(children.split(' ')[0]);
  } catch {
    return undefined;
  }
}

type Kind = 'completed' | 'model_error' | 'max_turns' | 'SIGINT' | 'SIGTERM' | 'output closed';
const EXPECTED: Record<Kind, number> = {
  completed: 0,
  model_error: 1,
  max_turns: 1,
  SIGINT: 130,
  SIGTERM: 143,
  'output closed': 141,
};

function script(kind: Kind): void {
  const hold = { sse: [sseData(chatChunk({ role: 'assistant', content: 'x'.repeat(10) }))], hold: true };
  if (kind === 'completed') server.enqueue(textStream('done'));
  else if (kind === 'model_error') server.enqueue(unauthorized);
  else if (kind === 'max_turns') server.enqueue(toolCallsStream([{ id: 'c1', name: 'list_dir', args: {} }]));
  else server.enqueue(hold);
}

describe('exit codes of every terminal kind', () => {
  const kinds = Object.keys(EXPECTED) as Kind[];

  it.each(kinds)('%s, tasks piped on stdin', async (kind) => {
    const n = server.requests.length;
    script(kind);
    const dir = tempFolder();
    const args = [...endpoint(), '--max-turns', '1', ...(kind === 'output closed' ? ['--json'] : [])];
    const child = spawn(process.execPath, [BIN, ...args], { cwd: dir, env: cliEnv(), stdio: ['pipe', 'pipe', 'pipe'] });
    child.stdin.end('the task\n');
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const byShell = (c: number | null, s: NodeJS.Signals | null) =>
      c ?? (s === 'SIGINT' ? 130 : s === 'SIGTERM' ? 143 : -1);
    const code = new Promise<number>((resolve) => child.on('close', (c, s) => resolve(byShell(c, s))));
    child.stdout.on('data', () => undefined);
    if (kind === 'SIGINT' || kind === 'SIGTERM') {
      await server.request(n);
      child.kill(kind);
    } else if (kind === 'output closed') {
      await server.request(n);
      child.stdout.destroy();
    }
    expect(await code, stderr).toBe(EXPECTED[kind]);
  });

  it.each(kinds)('%s, on a terminal (the task given as an argument)', async (kind) => {
    const n = server.requests.length;
    script(kind);
    const dir = tempFolder();
    const rc = path.join(dir, 'rc');
    const quote = (w: string) => `'${w.replace(/'/g, `'\\''`)}'`;
    const cli = [process.execPath, BIN, ...endpoint(), '--max-turns', '1'].map(quote).join(' ');
    // Output closed: stdout is a pipe into head, stdin and stderr stay the terminal; the CLI's own status goes to rc.
    const command =
      kind === 'output closed'
        ? `{ ${cli} --json 'the task'; echo $? > rc; } | head -c 1 > /dev/null`
        : `exec ${cli} 'the task'`;
    const pty = runInPty(command, dir);
    if (kind === 'SIGINT') {
      await server.request(n);
      await waitFor('the answer on the terminal', () => pty.screen().includes('xxxxxxxxxx'));
      pty.type('\x03');
    } else if (kind === 'SIGTERM') {
      await server.request(n);
      const pid = await waitFor('the CLI process', () => childOf(pty.child.pid!));
      process.kill(pid, 'SIGTERM');
    }
    const { code, screen } = await pty.done;
    if (kind === 'output closed') {
      await waitFor('the exit status', () => existsSync(rc) && readFileSync(rc, 'utf8').trim() !== '');
      expect(Number(readFileSync(rc, 'utf8').trim()), screen).toBe(141);
    } else expect(code, screen).toBe(EXPECTED[kind]);
  });
});
