/**
 * Minimal wire checks that a local service answers, with no client library: a
 * Postgres startup + `SELECT 1` (protocol 3.0, trust auth) and a Redis `PING`.
 * Each resolves with what the server said or rejects with a one-line cause.
 */
import { connect, type Socket } from 'node:net';

/** How long one probe may take, connect included (ms). */
export const PROBE_TIMEOUT_MS = 5_000;

type Talk<T> = (socket: Socket, done: (value: T) => void, fail: (cause: string) => void) => void;

/** Opens a TCP connection and lets `talk` speak; rejects with `<name> on host:port: <cause>` on any failure. */
function probe<T>(name: string, host: string, port: number, talk: Talk<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const socket = connect({ host, port });
    let settled = false;
    const fail = (cause: string) => {
      if (settled) return;
      settled = true;
      socket.destroy();
      reject(new Error(`${name} on ${host}:${port}: ${cause}`));
    };
    const done = (value: T) => {
      if (settled) return;
      settled = true;
      socket.end();
      resolve(value);
    };
    socket.setTimeout(PROBE_TIMEOUT_MS, () => fail(`no answer within ${PROBE_TIMEOUT_MS} ms`));
    socket.on('error', (err: NodeJS.ErrnoException) => fail(err.code ?? err.message));
    socket.on('close', () => fail('connection closed before the answer'));
    socket.on('connect', () => talk(socket, done, fail));
  });
}

/** Sends `PING`, resolves with the reply line (`+PONG` from a healthy server). */
export function redisPing(host = '127.0.0.1', port = 6379): Promise<string> {
  return probe<string>('Redis', host, port, (socket, done, fail) => {
    let text = '';
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      const end = text.indexOf('\r\n');
      if (end < 0) return;
      const line = text.slice(0, end);
      if (line === '+PONG') done(line);
      else fail(`PING answered ${JSON.stringify(line)}`);
    });
    socket.write('*1\r\n$4\r\nPING\r\n');
  });
}

const cstr = (s: string) => Buffer.from(`${s}\0`, 'utf8');

function message(type: string, body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.write(type, 0, 'latin1');
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

/** The `M` (message) field of an ErrorResponse body. */
function errorText(body: Buffer): string {
  for (let i = 0; i < body.length && body[i] !== 0;) {
    const end = body.indexOf(0, i + 1);
    if (body[i] === 0x4d) return body.toString('utf8', i + 1, end);
    i = end + 1;
  }
  return 'error without a message';
}

/**
 * Logs in as `user` to `database` (trust auth only: any password request is a failure), runs `SELECT 1` and
 * resolves with the value of the one row (`'1'`).
 */
export function postgresSelectOne(
  opts: { host?: string; port?: number; user?: string; database?: string } = {},
): Promise<string> {
  const { host = '127.0.0.1', port = 5432, user = 'postgres', database = 'test' } = opts;
  return probe<string>('Postgres', host, port, (socket, done, fail) => {
    let buffer = Buffer.alloc(0);
    let value: string | undefined;
    let queried = false;
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      while (buffer.length >= 5) {
        const length = buffer.readInt32BE(1);
        if (buffer.length < 1 + length) return;
        const type = String.fromCharCode(buffer[0]!);
        const body = buffer.subarray(5, 1 + length);
        buffer = buffer.subarray(1 + length);
        if (type === 'E') return fail(`${queried ? 'SELECT 1' : 'login'} failed: ${errorText(body)}`);
        if (type === 'R' && body.readInt32BE(0) !== 0) {
          return fail(`asks for authentication (method ${body.readInt32BE(0)}); trust auth expected`);
        }
        if (type === 'D') value = body.toString('utf8', 6, 6 + body.readInt32BE(2)); // column count, length, value
        if (type !== 'Z') continue;
        if (!queried) {
          queried = true;
          socket.write(message('Q', cstr('SELECT 1')));
        } else {
          socket.write(message('X', Buffer.alloc(0)));
          return value === undefined ? fail('SELECT 1 returned no row') : done(value);
        }
      }
    });
    const params = Buffer.concat([cstr('user'), cstr(user), cstr('database'), cstr(database), Buffer.from([0])]);
    const startup = Buffer.alloc(8);
    startup.writeInt32BE(8 + params.length, 0);
    startup.writeInt32BE(196_608, 4); // protocol 3.0
    socket.write(Buffer.concat([startup, params]));
  });
}
