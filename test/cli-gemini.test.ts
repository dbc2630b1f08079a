/**
 * `loopctl --provider gemini` (the built bin, `node dist/cli/main.js`) against the local Gemini-shaped server
 * (test/support/gemini-server.ts, which refuses what the real API refuses): it streams the answer and exits 0, stops
 * on Ctrl-C with exit 130 closing the socket, is the default when GEMINI_API_KEY or GOOGLE_API_KEY is set (and no
 * ANTHROPIC_API_KEY), and names the model and the origin in its header line.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCli } from '../src/cli/args.js';
import { selectModel } from '../src/cli/model.js';
import { geminiFrames, readGeminiFixture, startGeminiServer, type GeminiServer } from './support/gemini-server.js';
import { cliEnv, ensureBuilt, removeTempFolders, runBin, tempFolder, waitFor } from './cli-helpers.js';

let server: GeminiServer;
beforeAll(async () => {
  server = await startGeminiServer();
  await ensureBuilt();
}, 180_000);
afterAll(async () => {
  removeTempFolders();
  await server?.close();
});

const closedSoon = (req: { whenClosed: Promise<void> }) =>
  Promise.race([req.whenClosed.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 5000))]);

describe('loopctl --provider gemini against a local Gemini-shaped server', () => {
  it('streams the answer on stdout and exits 0; the request is a valid streamGenerateContent request', async () => {
    const dir = tempFolder();
    const n = server.requests.length;
    server.enqueue({ fixture: 'text.sse' });
    const run = runBin(['--provider', 'gemini', '--base-url', server.url, 'say hello'], dir);
    const { code, stdout, stderr } = await run.done;
    expect({ code, stdout }).toEqual({ code: 0, stdout: 'Hello from Gemini.\n' });
    expect(stderr).toContain(`gemini-2.5-flash (Gemini at ${server.url})`);
    const sent = server.requests[n]!;
    expect([sent.method, sent.path]).toEqual(['POST', '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse']);
    expect(sent.body.contents.at(-1)).toEqual({ role: 'user', parts: [{ text: 'say hello' }] });
    const declared = sent.body.tools.flatMap((t: { functionDeclarations?: { name: string }[] }) =>
      (t.functionDeclarations ?? []).map((f) => f.name),
    );
    expect(declared).toEqual(['list_dir', 'read_file', 'search_files', 'write_file']);
    expect(sent.headers['x-goog-api-key']).toBe('not-needed');
    expect(server.rejected().map((r) => r.rejected)).toEqual([]);
  });

  it('Ctrl-C mid-stream: cancelled, exit 130, the server sees the socket close', async () => {
    const dir = tempFolder();
    const n = server.requests.length;
    server.enqueue({ sse: geminiFrames(readGeminiFixture('text.sse')).slice(0, 1), hold: true });
    const args = ['--provider', 'gemini', '--base-url', server.url, '--model', 'gemini-x', '--json', 'go'];
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
    expect(req.model).toBe('gemini-x');
  });

  for (const variable of ['GEMINI_API_KEY', 'GOOGLE_API_KEY']) {
    it(`${variable} set: gemini is the default provider, its key sent, --base-url its origin`, async () => {
      const dir = tempFolder();
      const n = server.requests.length;
      server.enqueue({ fixture: 'text.sse' });
      const env = { ...cliEnv(), [variable]: `key-from-${variable}` };
      const { code, stdout, stderr } = await runBin(['--base-url', server.url, 'hi'], dir, env).done;
      expect({ code, stdout }).toEqual({ code: 0, stdout: 'Hello from Gemini.\n' });
      expect(stderr).toContain(`gemini-2.5-flash (Gemini at ${server.url})`);
      expect(server.requests[n]!.headers['x-goog-api-key']).toBe(`key-from-${variable}`);
    });
  }
});

describe('choosing gemini', () => {
  const choose = async (argv: string[], env: Record<string, string>) => {
    const command = parseCli([...argv, 'task'], {});
    if (command.kind !== 'run') throw new Error(`not a run: ${command.kind}`);
    const model = await selectModel(command.options, env);
    await model.close();
    return [model.provider.id, model.label];
  };
  const origin = 'https://generativelanguage.googleapis.com';

  it('follows GEMINI_API_KEY / GOOGLE_API_KEY after ANTHROPIC_API_KEY and before OPENAI_API_KEY', async () => {
    const label = (model: string, at = origin) => `${model} (Gemini at ${at})`;
    expect(await choose([], { GEMINI_API_KEY: 'g', OPENAI_API_KEY: 'o' })).toEqual([
      'gemini:gemini-2.5-flash',
      label('gemini-2.5-flash'),
    ]);
    expect(await choose([], { GOOGLE_API_KEY: 'g' })).toEqual(['gemini:gemini-2.5-flash', label('gemini-2.5-flash')]);
    expect((await choose([], { ANTHROPIC_API_KEY: 'a', GEMINI_API_KEY: 'g' }))[0]).toBe('anthropic:claude-sonnet-4-5');
    expect(
      await choose(['--provider', 'gemini', '--model', 'gemini-pro-x', '--base-url', 'http://127.0.0.1:9'], {}),
    ).toEqual(['gemini:gemini-pro-x', label('gemini-pro-x', 'http://127.0.0.1:9')]);
    await expect(choose(['--provider', 'gemini', '--responses'], {})).rejects.toThrow(
      'option --responses is for --provider openai',
    );
  });
});
