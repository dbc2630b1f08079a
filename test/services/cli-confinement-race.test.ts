/**
 * Race-free confinement: the check is made on what was opened, not on the name. A helper
 * process swaps names with renameat2(RENAME_EXCHANGE) (python3 ctypes;
 * coreutils here has no `mv --exchange`) as fast as it can, in a bounded
 * loop, while the CLI reads `race.txt` 150 times and writes `d/w.txt` 150
 * times: `race.txt` ⇄ a symlink to a file outside, `d/` ⇄ a symlink to a
 * folder outside. No read returns outside content, nothing is written or
 * left outside, no temp file is left anywhere. Then a FIFO swapped in for
 * `race.txt`: reads never hang, and two SIGINTs end the process with 130.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync, existsSync, lstatSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startOpenAIServer,
  textStream,
  toolCallsStream,
  type OpenAIServer,
  type RecordedRequest,
} from '../support/openai-server.js';
import { ensureBuilt, removeTempFolders, runBin, tempFolder, waitFor } from '../cli-helpers.js';

/** Swaps each pair of names (argv: stop file, limit, pairs) until the stop file exists or `limit` rounds ran. */
const SWAPPER = `
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if not hasattr(libc, 'renameat2'):
    sys.exit('renameat2 is not in this libc: the race helper cannot run')
AT_FDCWD, RENAME_EXCHANGE = -100, 2
stop, limit = sys.argv[1], int(sys.argv[2])
names = [a.encode() for a in sys.argv[3:]]
pairs = list(zip(names[0::2], names[1::2]))
print('ready', flush=True)
rounds = 0
while rounds < limit:
    for a, b in pairs:
        if libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) != 0:
            e = ctypes.get_errno()
            sys.exit('renameat2 %s %s: %s' % (a, b, os.strerror(e)))
    rounds += 1
    if rounds % 64 == 0 and os.path.exists(stop):
        break
print(rounds, flush=True)
`;

interface Swapper {
  readonly child: ChildProcess;
  /** Creates the stop file; resolves with the rounds swapped. */
  stop(): Promise<number>;
}

async function startSwapper(cwd: string, pairs: readonly (readonly [string, string])[]): Promise<Swapper> {
  const stopFile = path.join(cwd, '..', 'stop-swapping');
  const args = ['-c', SWAPPER, stopFile, '20000000', ...pairs.flat()];
  const child = spawn('python3', args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exited = new Promise<number | null>((resolve, reject) => {
    child.on('error', (e) => reject(new Error(`cannot start python3 for the race helper: ${e.message}`)));
    child.on('close', resolve);
  });
  await waitFor('the race helper to start', () => {
    if (err !== '') throw new Error(`race helper: ${err.trim()}`);
    return out.startsWith('ready');
  });
  return {
    child,
    async stop() {
      writeFileSync(stopFile, '');
      const code = await exited;
      if (code !== 0) throw new Error(`race helper exited ${code}: ${err.trim()}`);
      return Number(out.trim().split('\n').at(-1));
    },
  };
}

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
const toolMessages = (req: RecordedRequest): string[] =>
  req.body.messages.filter((m: any) => m.role === 'tool').map((m: any) => m.content);
/** Every entry under `dir`, recursively, without following symlinks. */
const tree = (dir: string) => readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort();

describe('race-free confinement', () => {
  it('150 reads and 150 writes while names are swapped for symlinks outside: no escape, no leftover', async () => {
    const base = tempFolder();
    const root = path.join(base, 'root');
    const outside = path.join(base, 'outside');
    mkdirSync(path.join(root, 'd'), { recursive: true });
    mkdirSync(path.join(outside, 'dir'), { recursive: true });
    writeFileSync(path.join(root, 'race.txt'), 'INSIDE\n');
    writeFileSync(path.join(outside, 'secret.txt'), 'OUTSIDE-SECRET\n');
    symlinkSync(path.join(outside, 'secret.txt'), path.join(root, 'race-link'));
    symlinkSync(path.join(outside, 'dir'), path.join(root, 'd-link'));

    const calls = Array.from({ length: 150 }, (_, i) => [
      { id: `r${i}`, name: 'read_file', args: { path: 'race.txt' } },
      { id: `w${i}`, name: 'write_file', args: { path: 'd/w.txt', content: `write ${i}\n` } },
    ]).flat();
    const n = server.requests.length;
    server.enqueue(toolCallsStream(calls), textStream('done'));
    const swapper = await startSwapper(root, [
      ['race.txt', 'race-link'],
      ['d', 'd-link'],
    ]);
    const { code, stderr } = await runBin([...endpoint(), 'race'], root).done;
    const rounds = await swapper.stop();
    expect(code, stderr).toBe(0);
    expect(rounds).toBeGreaterThan(0);

    const results = toolMessages(server.requests[n + 1]!);
    expect(results).toHaveLength(300);
    const reads = results.filter((_, i) => i % 2 === 0);
    const writes = results.filter((_, i) => i % 2 === 1);
    const leaked = results.filter((r) => r.includes('OUTSIDE-SECRET')).length;
    expect(leaked, 'reads that returned the outside file').toBe(0);
    // Each call either worked inside or was refused (outside, or a name caught mid-swap: missing, a broken link).
    for (const read of reads) expect(read).toMatch(/^INSIDE\n$|^Error: /);
    for (const write of writes) expect(write).toMatch(/^wrote \d+ bytes to d\/w\.txt$|^Error: /);
    expect(reads.filter((r) => r.startsWith('Error')).length, 'the race was exercised').toBeGreaterThan(0);

    // Nothing written or left outside; no temp file anywhere; the outside file is untouched.
    expect(tree(outside)).toEqual(['dir', 'secret.txt']);
    expect(readFileSync(path.join(outside, 'secret.txt'), 'utf8')).toBe('OUTSIDE-SECRET\n');
    expect(tree(base).filter((name) => name.endsWith('.tmp'))).toEqual([]);
    const realDir = lstatSync(path.join(root, 'd')).isDirectory() ? 'd' : 'd-link';
    const written = writes.filter((w) => w.startsWith('wrote')).length;
    if (written > 0) expect(readFileSync(path.join(root, realDir, 'w.txt'), 'utf8')).toMatch(/^write \d+\n$/);
    expect(readdirSync(path.join(root, realDir)).sort()).toEqual(written > 0 ? ['w.txt'] : []);
  }, 120_000);

  it('a FIFO swapped in for race.txt: no read hangs, and two SIGINTs end the process with exit 130', async () => {
    const root = tempFolder({ 'race.txt': 'INSIDE\n' });
    execFileSync('mkfifo', [path.join(root, 'fifo')]);
    const calls = Array.from({ length: 150 }, (_, i) => ({
      id: `r${i}`,
      name: 'read_file',
      args: { path: 'race.txt' },
    }));
    const n = server.requests.length;
    server.enqueue(toolCallsStream(calls), { stall: true });
    const swapper = await startSwapper(root, [['race.txt', 'fifo']]);
    const cli = runBin([...endpoint(), 'race'], root);
    try {
      const second = await server.request(n + 1); // all 150 reads are done: none of them hung on the FIFO
      const results = toolMessages(second);
      expect(results).toHaveLength(150);
      for (const read of results)
        expect(read).toMatch(/^INSIDE\n$|^Error: "race\.txt" is not a regular file \(it is a FIFO\)/);
      cli.child.kill('SIGINT');
      cli.child.kill('SIGINT');
      expect((await cli.done).code).toBe(130);
    } finally {
      await swapper.stop();
    }
    expect(existsSync(path.join(root, 'fifo')) || existsSync(path.join(root, 'race.txt'))).toBe(true);
  }, 120_000);
});
