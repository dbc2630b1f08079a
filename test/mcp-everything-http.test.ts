import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { connectStreamableHttp } from '../src/node/index.js';
import { EVERYTHING_BIN, everythingScenario } from './mcp-everything-scenario.js';

/**
 * mcpTools against the real @modelcontextprotocol/server-everything over
 * Streamable HTTP (connectStreamableHttp), the server a child process on a
 * free port, reached at 127.0.0.1.
 */
async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

/**
 * Starts server-everything's streamableHttp mode; resolves once it listens (rejects if it exits first, e.g.
 * EADDRINUSE).
 */
function startServer(port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, [EVERYTHING_BIN, 'streamableHttp'], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let err = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      err += chunk.toString();
      if (err.includes('listening on port')) resolve(child);
    });
    child.once('exit', (code) => reject(new Error(`server-everything exited (${code}): ${err}`)));
  });
}

let child: ChildProcess | undefined;
let port = 0;
beforeAll(async () => {
  for (let attempt = 1; !child; attempt++) {
    port = await freePort();
    try {
      child = await startServer(port);
    } catch (err) {
      if (attempt >= 3) throw err;
    }
  }
});
afterAll(async () => {
  if (child && child.exitCode === null) {
    child.kill();
    await once(child, 'exit');
  }
});

describe('server-everything over Streamable HTTP', () => {
  it('lists, calls, cancels the long-running operation with notifications/cancelled, and calls again', async () => {
    const client = await connectStreamableHttp(`http://127.0.0.1:${port}/mcp`);
    try {
      await everythingScenario(client);
    } finally {
      await client.close();
    }
  });
});
