/**
 * Terminal safety and feedback while waiting, end to end: the CLI
 * on a pseudo-terminal (util-linux `script`) and on pipes.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKOFF_TEXT } from '../support/backoff-text.js';
import { chatChunk, sseData, startOpenAIServer, textStream, type OpenAIServer } from '../support/openai-server.js';
import {
  ensureBuilt,
  occurrences,
  removeTempFolders,
  runBin,
  runBinInPty,
  tempFolder,
  waitFor,
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
/** loopctl's own status sequences on a terminal stderr; anything else that is a control character escaped. */
const OWN = /\r\x1b\[K|\x1b\[K|\x1b7|\x1b8/g;
const CONTROL = /[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/;

/** A folder whose names and contents hold terminal escapes. */
function hostileFolder(): string {
  const dir = tempFolder({ 'colour.md': 'needle \x1b[31mred\x1b[0m and \u202egnp.exe\n', 'plain.md': 'nothing\n' });
  writeFileSync(path.join(dir, 'clear\x1b[2J.md'), 'x\n');
  writeFileSync(path.join(dir, 'title\x1b]0;pwned\x07.md'), 'x\n');
  writeFileSync(path.join(dir, 'two\nlines.md'), 'x\n');
  return dir;
}

describe('no control character from untrusted text reaches the terminal', () => {
  it('on a terminal: names, contents, model text shown escaped; a name with a newline on one line', async () => {
    const dir = hostileFolder();
    const list = await runBinInPty(['list the markdown files'], dir).done;
    const find = await runBinInPty(['find needle'], dir).done;
    server.enqueue(textStream('model says \x1b]0;title\x07 and \x1b[2J\x9b31m done'));
    const model = await runBinInPty([...endpoint(), 'talk'], tempFolder()).done;
    for (const { code, raw } of [list, find, model]) {
      expect(code, raw).toBe(0);
      expect(raw.replace(OWN, '').replace(/\r\n/g, '\n')).not.toMatch(CONTROL);
    }
    expect(list.screen).toContain('- "clear\\u001b[2J.md"');
    expect(list.screen).toContain('- "title\\u001b]0;pwned\\u0007.md"');
    expect(list.screen).toContain('- "two\\nlines.md"');
    expect(find.screen).toContain('1: needle \\x1b[31mred\\x1b[0m and \\u202egnp.exe');
    expect(model.screen).toContain('model says \\x1b]0;title\\x07 and \\x1b[2J\\x9b31m done');
  });

  it('piped: the same rule, and no cursor sequence of loopctl either', async () => {
    const dir = hostileFolder();
    for (const task of ['list the markdown files', 'find needle']) {
      const { code, stdout, stderr } = await runBin([task], dir).done;
      expect(code).toBe(0);
      expect(stdout + stderr.replace(/\r?\n/g, '\n')).not.toMatch(CONTROL);
      expect(stderr).not.toContain('\x1b');
    }
  });
});

describe('a wait is shown within 2 s, bounded, announced, and Ctrl-C works throughout', () => {
  it('a server that never answers: status with elapsed seconds, retries announced, one failure line', async () => {
    const n = server.requests.length;
    const silent = { stall: true as const, sendHeaders: false };
    server.enqueue(silent, silent, silent);
    const { code, screen } = await runBinInPty([...endpoint(), '--timeout', '3', 'hello'], tempFolder()).done;
    expect(code, screen).toBe(1);
    expect(server.requests.length).toBe(n + 3);
    const status = screen.indexOf('⏵ waiting for openai:test-model to start answering · 1 s (gives up at 3 s)');
    const retry = screen.indexOf('[loopctl] the model sent nothing within 3 s (first-event deadline): retrying in ');
    expect(status).toBeGreaterThan(0);
    expect(retry).toBeGreaterThan(status);
    expect(occurrences(screen, '(first-event deadline): retrying in')).toBe(2);
    expect(screen).toMatch(
      /\[loopctl\] failed \(model_error\): the model sent nothing within 3 s \(first-event deadline\) · /,
    );
    expect(occurrences(screen, '[loopctl] failed')).toBe(1);
  }, 60_000);

  it('a stream that stalls after one chunk: silence shown, the rescue and the retries announced, exit 1', async () => {
    const n = server.requests.length;
    const half = { sse: [sseData(chatChunk({ role: 'assistant', content: 'Half' }))], hold: true };
    server.enqueue(half, { stall: true }, half, half);
    const { code, screen } = await runBinInPty([...endpoint(), '--timeout', '3', 'hello'], tempFolder()).done;
    expect(code, screen).toBe(1);
    expect(server.requests.map((r) => r.body.stream).slice(n)).toEqual([true, false, true, true]);
    expect(screen).toContain('⏵ stream silent · 1 s (gives up at 3 s)');
    expect(screen).toContain(
      "[loopctl] the stream broke (the model's stream went silent for 3 s (idle deadline)): " +
        'asking again without streaming; ' +
        'the answer starts over',
    );
    expect(screen).toContain("⏵ waiting for openai:test-model's whole answer (not streamed) · 1 s (gives up at 3 s)");
    expect(screen).toContain('[loopctl] no complete answer from the model within 3 s (request deadline): retrying in ');
    expect(occurrences(screen, '[loopctl] failed (model_error)')).toBe(1);
  }, 60_000);

  it('Ctrl-C while waiting for the model: cancelled at once, exit 130', async () => {
    const n = server.requests.length;
    server.enqueue({ stall: true, sendHeaders: false });
    const cli = runBinInPty([...endpoint(), 'hello'], tempFolder());
    await server.request(n);
    await waitFor('the status line', () => cli.screen().includes('⏵ waiting for openai:test-model'));
    cli.type('\x03');
    const { code, screen } = await cli.done;
    expect(code).toBe(130);
    expect(screen).toMatch(/\[loopctl\] cancelled \(reason: SIGINT, phase: model_request\)/);
  });

  it('piped: no status line, the retries and one failure line on stderr, exit 1', async () => {
    const silent = { stall: true as const, sendHeaders: false };
    server.enqueue(silent, silent, silent);
    const { code, stdout, stderr } = await runBin([...endpoint(), '--timeout', '1', 'hello'], tempFolder()).done;
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).not.toContain('\x1b');
    const lines = stderr.trimEnd().split('\n');
    // the header's 2nd
    expect(lines[1]).toMatch(/^\[loopctl\] conversation \S+ \(new; loopctl --continue resumes it\)$/);
    // Full jitter: a backoff under 0.1 s is shown in ms, one under 0.5 ms as "under 1 ms" (support/backoff-text.ts).
    const delay = new RegExp(`retrying in ${BACKOFF_TEXT}`);
    expect(lines.slice(2, 4).map((l) => l.replace(delay, 'retrying in N s'))).toEqual([
      '[loopctl] the model sent nothing within 1 s (first-event deadline): retrying in N s (attempt 2)',
      '[loopctl] the model sent nothing within 1 s (first-event deadline): retrying in N s (attempt 3)',
    ]);
    expect(lines[4]).toMatch(
      /^\[loopctl\] failed \(model_error\): the model sent nothing within 1 s \(first-event deadline\) · /,
    );
    // a new conversation whose run failed was never stored: the header's "resumes it" is corrected
    expect(lines[5]).toMatch(
      /^\[loopctl\] conversation \S+ was not created: its run did not complete, so nothing resumes it$/,
    );
    expect(lines).toHaveLength(6);
  });
});
