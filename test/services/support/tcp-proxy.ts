/**
 * A TCP proxy on 127.0.0.1 in front of one address (the shared Redis), that a spec can cut and restore: `cut()`
 * destroys every open connection and refuses new ones (as a Redis that went away: `ECONNREFUSED`), `restore()`
 * accepts again. So an outage is tried on the processes that go through the proxy without stopping the Redis
 * every other spec uses.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  /** The port the proxy listens on. */
  readonly port: number;
  /** Closes every connection and stops listening: a new connection is refused. */
  cut(): Promise<void>;
  /** Listens again on the same port. */
  restore(): Promise<void>;
  /** How many connections were accepted so far. */
  readonly accepted: number;
  close(): Promise<void>;
}

/** A proxy to `target` (`host:port`), listening on a free port of 127.0.0.1. */
export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const open = new Set<Socket>();
  let accepted = 0;
  const onConnection = (client: Socket) => {
    accepted++;
    const upstream = connect(target.port, target.host);
    open.add(client).add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream).pipe(client);
  };
  let server: Server = createServer(onConnection);
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve((server.address() as { port: number }).port);
      });
    });
  const port = await listen(0);
  const stop = () =>
    new Promise<void>((resolve) => {
      for (const socket of open) socket.destroy();
      open.clear();
      server.close(() => resolve());
    });
  return {
    port,
    get accepted() {
      return accepted;
    },
    cut: stop,
    async restore() {
      server = createServer(onConnection);
      await listen(port);
    },
    close: stop,
  };
}
