/**
 * `loopctl worker --queue` and `loopctl serve --queue` with a Redis that does not answer (a port nothing listens
 * on; the shared Redis is never stopped): each exits 1 with one line naming the URL (password hidden), the cause
 * and what to do; and with a reachable Redis each names its queue and URL when it starts.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, cliEnv, ensureBuilt, removeTempFolders, tempFolder, waitFor } from '../cli-helpers.js';

/** A port on 127.0.0.1 that nothing listens on (taken, then given back). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function start(args: string[], cwd: string) {
  const child = spawn(process.execPath, [BIN, ...args], { cwd, env: cliEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  const io = { out: '', err: '' };
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (io.out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (io.err += d));
  const exited = new Promise<number>((resolve) =>
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 128 : -1))),
  );
  return { child, io, exited };
}

beforeAll(() => ensureBuilt({ web: true }), 180_000);
afterAll(() => removeTempFolders());

describe('the queue says what is wrong when its Redis does not answer', () => {
  for (const command of [['worker'], ['serve', '--port', '0']]) {
    const name = command[0] === 'worker' ? 'loopctl worker' : 'loopctl serve --queue';
    it(`${name}: exit 1 with one line naming the Redis URL (password hidden) and the cause`, async () => {
      const port = await closedPort();
      const url = `redis://:hunter2@127.0.0.1:${port}/0?queue=nowhere`;
      const started = performance.now();
      const proc = start([...command, '--queue', url], tempFolder());
      const code = await proc.exited;
      console.log(`${name} with Redis unreachable: exit ${code} after ${Math.round(performance.now() - started)} ms`);
      expect(code, proc.io.err).toBe(1);
      expect(proc.io.err).toContain(
        `loopctl: ${name} cannot reach the queue's Redis at redis://:***@127.0.0.1:${port}/0?queue=nowhere (`,
      );
      expect(proc.io.err).toContain('): start Redis there, or pass --queue the URL of one that runs\n');
      expect(proc.io.err).toContain('ECONNREFUSED');
      expect(proc.io.err + proc.io.out).not.toContain('hunter2');
      expect(proc.io.out).not.toContain('http://'); // serve never offered a page it could not serve
    }, 60_000);
  }

  it('with Redis up, the worker and serve each name the queue and the URL when they start', async () => {
    const queue = `unreach${process.pid}`;
    const url = `redis://127.0.0.1:6379/0?queue=${queue}`;
    const folder = tempFolder();
    const worker = start(['worker', '--queue', url], folder);
    const serve = start(['serve', '--port', '0', '--queue', url], folder);
    try {
      await waitFor(
        'the worker line',
        () => worker.io.out.includes(`taking runs from queue "${queue}" on ${url}`),
        30_000,
      );
      await waitFor('the serve line', () => serve.io.err.includes(`runs go to queue "${queue}" on ${url}`), 30_000);
    } finally {
      worker.child.kill('SIGTERM');
      serve.child.kill('SIGTERM');
    }
    expect(await worker.exited).toBe(0);
    expect(await serve.exited).toBe(143);
  }, 60_000);
});
