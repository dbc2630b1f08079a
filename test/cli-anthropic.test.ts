/**
 * `loopctl --provider anthropic` (the built bin, `node dist/cli/main.js`) against the local Anthropic-shaped server:
 * it streams the answer, stops on Ctrl-C with exit 130 closing the socket, and is the default when ANTHROPIC_API_KEY
 * is set. The choice of provider itself (`--provider`, keys, `--help`) is checked without a child process.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HELP, parseCli } from '../src/cli/args.js';
import { selectModel } from '../src/cli/model.js';
import { ENVIRONMENT } from '../src/cli/help.js';
import {
  anthropicStream,
  anthropicTextStream,
  readAnthropicFixture,
  startAnthropicServer,
  type AnthropicRequest,
  type AnthropicServer,
} from './support/anthropic-server.js';
import { sseFrames } from './support/openai-server.js';
import { cliEnv, ensureBuilt, removeTempFolders, runBin, tempFolder, waitFor } from './cli-helpers.js';

let server: AnthropicServer;
beforeAll(async () => {
  server = await startAnthropicServer();
  await ensureBuilt();
}, 180_000);
afterAll(async () => {
  removeTempFolders();
  await server?.close();
});

const closedSoon = (req: AnthropicRequest) =>
  Promise.race([req.whenClosed.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 5000))]);

describe('loopctl --provider anthropic against a local Anthropic-shaped server', () => {
  it('streams the answer on stdout and exits 0; the request is a valid Messages request', async () => {
    const dir = tempFolder();
    const n = server.requests.length;
    server.enqueue({ fixture: 'text.sse' });
    const run = runBin(['--provider', 'anthropic', '--base-url', server.baseURL, 'say hello'], dir);
    const { code, stdout, stderr } = await run.done;
    expect({ code, stdout }).toEqual({ code: 0, stdout: 'Hello from Claude.\n' });
    expect(stderr).toContain(`claude-sonnet-4-5 (Anthropic Messages at ${server.baseURL})`);
    const sent = server.requests[n]!;
    expect(sent.path).toBe('/v1/messages');
    expect(sent.body).toMatchObject({ model: 'claude-sonnet-4-5', max_tokens: 4096, stream: true });
    expect(sent.body.messages.at(-1)).toEqual({ role: 'user', content: [{ type: 'text', text: 'say hello' }] });
    expect(sent.body.tools.map((t: { name: string }) => t.name)).toEqual([
      'list_dir',
      'read_file',
      'search_files',
      'write_file',
    ]);
    expect(server.rejections()).toEqual([]);
  });

  it('Ctrl-C mid-stream: cancelled, exit 130, the server sees the socket close', async () => {
    const dir = tempFolder();
    const n = server.requests.length;
    server.enqueue({ sse: sseFrames(readAnthropicFixture('text.sse')).slice(0, 3), hold: true });
    const args = ['--provider', 'anthropic', '--base-url', server.baseURL, '--model', 'claude-x', '--json', 'go'];
    const run = runBin(args, dir);
    const req = await server.request(n);
    // --json: the events go out as they happen (a pipe gets the plain answer only once it is complete).
    await waitFor('the first streamed words', () => run.stdout().includes('"delta":"Hello"'));
    run.child.kill('SIGINT');
    const { code, stderr } = await run.done;
    expect(code).toBe(130);
    expect(stderr).toMatch(/\[loopctl\] cancelled \(reason: SIGINT, phase: model_stream\) · 1 turn · 0 tool calls/);
    expect(await closedSoon(req)).toBe(true);
    expect(req.finished).toBe(false);
    expect(req.body.model).toBe('claude-x');
  });

  it('ANTHROPIC_API_KEY set: anthropic is the default provider (its key sent, ANTHROPIC_BASE_URL its endpoint)', async () => {
    const dir = tempFolder();
    const n = server.requests.length;
    server.enqueue({ fixture: 'text.sse' });
    const env = { ...cliEnv(), ANTHROPIC_API_KEY: 'sk-ant-test', ANTHROPIC_BASE_URL: server.baseURL };
    const { code, stdout } = await runBin(['hi'], dir, env).done;
    expect({ code, stdout }).toEqual({ code: 0, stdout: 'Hello from Claude.\n' });
    const headers = server.requests[n]!.headers;
    expect(headers['x-api-key'] ?? headers['authorization']).toMatch(/^(Bearer )?sk-ant-test$/);
  });

  it('thinking signatures survive a process restart: a second process with --continue replays them unchanged', async () => {
    // The CLI sends no `thinking` option; the answers carry thinking blocks as a thinking-enabled model's would,
    // and the server checks they come back byte for byte in the second process's request.
    const dir = tempFolder({ 'notes.txt': 'alpha\n' });
    const n = server.requests.length;
    const thinking1 = { type: 'thinking', thinking: 'Read the notes first.', signature: 'EqkBSigOne+/=' } as const;
    const redacted = { type: 'redacted_thinking', data: 'EmwKAhgBRedacted+/=' } as const;
    const thinking2 = { type: 'thinking', thinking: 'It says alpha.', signature: 'EqkBSigTwo+/=' } as const;
    server.enqueue(
      anthropicStream(
        [thinking1, { type: 'tool_use', id: 'toolu_R1', name: 'read_file', input: { path: 'notes.txt' } }],
        'tool_use',
      ),
      anthropicStream([redacted, thinking2, { type: 'text', text: 'The notes say alpha.' }], 'end_turn'),
      anthropicTextStream('Nothing else.'),
    );
    const args = ['--provider', 'anthropic', '--base-url', server.baseURL];
    const first = await runBin([...args, 'what do the notes say?'], dir).done;
    expect({ code: first.code, stdout: first.stdout }).toEqual({ code: 0, stdout: 'The notes say alpha.\n' });
    const second = await runBin([...args, '--continue', 'anything else?'], dir).done;
    expect({ code: second.code, stdout: second.stdout }).toEqual({ code: 0, stdout: 'Nothing else.\n' });
    const resumed = server.requests[n + 2]!.body;
    const assistant = resumed.messages.filter((m: { role: string }) => m.role === 'assistant');
    expect(assistant.map((m: { content: unknown[] }) => m.content)).toEqual([
      [thinking1, { type: 'tool_use', id: 'toolu_R1', name: 'read_file', input: { path: 'notes.txt' } }],
      [redacted, thinking2, { type: 'text', text: 'The notes say alpha.' }],
    ]);
    expect(resumed.messages.at(-1)).toEqual({ role: 'user', content: [{ type: 'text', text: 'anything else?' }] });
    expect(server.requests.slice(n).map((r) => r.rejected)).toEqual([undefined, undefined, undefined]);
  });

  it('an unknown provider exits 2 naming the ones there are', async () => {
    const dir = tempFolder();
    const bogus = await runBin(['--provider', 'mistral', 'hi'], dir).done;
    expect(bogus.code).toBe(2);
    expect(bogus.stderr).toContain('option --provider must be one of anthropic, gemini, openai (got "mistral")');
  });
});

describe('choosing the provider', () => {
  const choose = async (argv: string[], env: Record<string, string>) => {
    const command = parseCli([...argv, 'task'], {});
    if (command.kind !== 'run') throw new Error(`not a run: ${command.kind}`);
    const model = await selectModel(command.options, env);
    await model.close();
    return model.provider.id;
  };

  it('the first key set wins, in the order anthropic, gemini, openai; --provider overrides; none: offline', async () => {
    expect(await choose([], { ANTHROPIC_API_KEY: 'a', OPENAI_API_KEY: 'o' })).toBe('anthropic:claude-sonnet-4-5');
    expect(await choose([], { OPENAI_API_KEY: 'o' })).toBe('openai:gpt-4o-mini');
    expect(await choose(['--provider', 'openai'], { ANTHROPIC_API_KEY: 'a' })).toBe('openai:gpt-4o-mini');
    expect(await choose(['--base-url', 'http://127.0.0.1:1/v1'], {})).toBe('openai:gpt-4o-mini');
    expect(await choose([], { GOOGLE_API_KEY: 'g', OPENAI_API_KEY: 'o' })).toBe('gemini:gemini-2.5-flash');
    expect(await choose([], {})).toBe('openai:loopctl-offline');
    await expect(choose(['--provider', 'anthropic', '--responses'], {})).rejects.toThrow(
      'option --responses is for --provider openai',
    );
  });

  it('--help lists --provider with its values and default, and each key variable', () => {
    expect(HELP).toMatch(/^ {2}--provider <name> {3}the model's API: anthropic, gemini, openai \(default:/m);
    for (const name of ['ANTHROPIC_API_KEY', 'ANTHROPIC_BASE_URL', 'GEMINI_API_KEY', 'OPENAI_API_KEY']) {
      expect(Object.keys(ENVIRONMENT)).toContain(name);
      expect(HELP).toMatch(new RegExp(`^  ${name}$`, 'm'));
    }
  });
});
