/**
 * A worker cut off from Redis cancels its own runs strictly before its peers may declare it lost
 * (docs/scale-out.md, "Failure semantics"): its self-cancel deadline (`eventStoreOutageMs`, default two thirds
 * of `lockDurationMs`) comes before its heartbeat can expire. The worker reaches Redis through a local TCP
 * proxy that is cut the way a partition is: Redis sees the worker's connections close, the worker sees its
 * sockets open and silent (no 'close' event). A second worker, connected directly, declares it lost.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { isTerminalEvent, type RunEvent } from '../../src/index.js';
import { allEvents, firstOf, queueFixture, sleep, type QueueFixture } from './support/queue.js';

const P = 'alice';
let fx: QueueFixture | undefined;
let proxy: { server: Server; cut(): void } | undefined;
afterEach(async () => {
  await fx?.cleanup();
  proxy?.server.close();
  fx = proxy = undefined;
});

/** A proxy to 127.0.0.1:6379 on a free port; `cut()` closes the Redis side and leaves the client side silent. */
async function cuttableProxy(): Promise<{ server: Server; port: number; cut(): void }> {
  let cut = false;
  const upstreams = new Set<Socket>();
  const server = createServer((client) => {
    client.on('error', () => undefined);
    if (cut) return; // a new connection hangs: accepted, never answered
    const upstream = createConnection(6379, '127.0.0.1');
    upstreams.add(upstream);
    upstream.on('error', () => undefined);
    client.on('data', (d) => void (cut || upstream.write(d)));
    upstream.on('data', (d) => void (cut || client.write(d)));
    upstream.on('close', () => upstreams.delete(upstream));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    server,
    port: (server.address() as { port: number }).port,
    cut() {
      cut = true;
      for (const u of upstreams) u.destroy();
    },
  };
}

describe('queue partition: a cut-off worker cancels its runs before it may be declared lost', () => {
  it('lockDurationMs 2000: the cut-off worker cancels its run itself, before the worker_lost terminal', async () => {
    fx = queueFixture();
    const p = await cuttableProxy();
    proxy = p;
    const cutOff = await fx.worker({ connection: `redis://127.0.0.1:${p.port}` });
    const { runId } = await fx.runs.start({ agent: 'queue-agent', threadId: 't', input: '!tool 20000', principal: P });
    const events$ = fx.runs.events(runId, { principal: P });
    await firstOf(events$, 'tool_call_started');
    await fx.worker(); // the peer that takes the stalled job and declares the owner lost
    const cutAt = Date.now();
    p.cut();
    const events = await allEvents(events$);
    const terminals = events.filter(isTerminalEvent);
    const lost = terminals[0] as Extract<RunEvent, { type: 'run_failed' }>;
    let selfCancel: RegExpExecArray | null = null;
    for (let i = 0; i < 100 && !selfCancel; i++) {
      selfCancel = new RegExp(`note ended ${runId} (\\S+) (\\d+)`).exec(cutOff.out());
      if (!selfCancel) await sleep(20);
    }
    const cancelledAt = Number(selfCancel?.[2] ?? NaN);
    console.log(
      `partition at lockDurationMs 2000: terminals stored ${terminals.length} (${lost.stopReason}); ` +
        `the cut-off worker ended its run ${selfCancel?.[1]} ${cancelledAt - cutAt} ms after the cut, ` +
        `declared lost ${lost.at - cutAt} ms after it (margin ${lost.at - cancelledAt} ms)`,
    );
    expect(terminals).toHaveLength(1);
    expect(lost).toMatchObject({ type: 'run_failed', stopReason: 'worker_lost' });
    expect(selfCancel?.[1]).toBe('cancelled');
    expect(cancelledAt).toBeLessThan(lost.at);
  }, 90_000);
});
