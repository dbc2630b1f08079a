import { describe, it } from 'vitest';
import { connectStdio } from '../src/node/index.js';
import { EVERYTHING_BIN, everythingScenario } from './mcp-everything-scenario.js';

/** mcpTools against the real @modelcontextprotocol/server-everything over stdio (connectStdio). */
describe('server-everything over stdio', () => {
  it('lists, calls, cancels the long-running operation with notifications/cancelled, and calls again', async () => {
    const client = await connectStdio({ command: process.execPath, args: [EVERYTHING_BIN, 'stdio'], stderr: 'ignore' });
    try {
      await everythingScenario(client);
    } finally {
      await client.close();
    }
  });
});
