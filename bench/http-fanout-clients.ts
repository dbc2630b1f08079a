/**
 * The SSE readers of bench/http-fanout.ts, in a child process (so the server's CPU is measured alone). On a
 * `{ urls, n, reader }` message it opens `n` event streams (`GET urls[i % urls.length]`), reports `{ attached }`
 * once every stream has its first bytes, and `{ done, frames, lags, cpu }` once every stream ended: the SSE
 * frames received; for every delta frame, how many ms after its schedule it arrived (each delta carries its
 * scheduled time as `@<epoch ms>`; server and readers share the machine's clock); and this process's CPU time
 * (user + system, µs) from the first request to the last stream's end.
 *
 * Two readers of the same streams:
 *  - `net` (the default): a raw `node:net` socket per stream that sends the GET itself and makes one pass
 *    over the bytes it receives, without HTTP parsing, chunk decoding or text decoding; the bytes are read
 *    into one shared buffer (`onread`), without a readable stream or a buffer allocated per read. A frame
 *    ends at a blank line (`\n\n`: HTTP's header and chunk lines end in `\r\n`, so only SSE frame ends have
 *    two `\n` in a row); `@` followed by digits is a schedule stamp. A frame with exactly one stamp is a delta
 *    (the run's final frame may repeat the whole text, so several stamps). The status line must be
 *    `HTTP/1.1 200`; the stream ends when the server closes the connection (`Connection: close`).
 *  - `http`: `node:http`'s client (llhttp, chunked decoding, a readable stream per response, UTF-8 decoding)
 *    and a scan of the decoded text per frame: 1.6–2.1 times the CPU per event of `net` (BENCHMARKS.md 7).
 * Both take the arrival time (`Date.now()`) once per read (a `data` event, or `onread`'s callback), before
 * scanning it.
 */
import { Agent, request } from 'node:http';
import { connect } from 'node:net';

/** What the parent sends for a round. */
interface Job {
  readonly urls: readonly string[];
  readonly n: number;
  readonly reader: 'net' | 'http';
}

/** Counts of one round, shared by the streams of the round. */
class Tally {
  attached = 0;
  done = 0;
  frames = 0;
  readonly lags: number[] = [];
  readonly cpu0 = process.cpuUsage();

  constructor(private readonly n: number) {}

  /** A stream's first bytes arrived. */
  attach(): void {
    if (++this.attached === this.n) process.send!({ attached: this.attached });
  }

  /** A stream ended; the last one reports the round. */
  end(after?: () => void): void {
    if (++this.done !== this.n) return;
    const d = process.cpuUsage(this.cpu0);
    process.send!({ done: this.done, frames: this.frames, lags: this.lags, cpu: d.user + d.system });
    after?.();
  }
}

const NL = 10;
const AT = 64;
const ZERO = 48;
const OK = Buffer.from('HTTP/1.1 200 ');

/** The buffer every raw socket reads into (`onread`): a socket's bytes are scanned before the next one reads. */
const READ_BUFFER = Buffer.alloc(64 * 1024);

/** One raw socket per stream, one pass over the bytes (see the file's comment). */
function netReader(url: string, tally: Tally): void {
  const { hostname, port, pathname, search } = new URL(url);
  let first = true;
  let lastNl = false; // the previous byte was `\n`
  let stamp = -1; // the digits after an `@`, while reading them
  let stamps = 0; // the stamps of the current frame
  let due = 0; // the current frame's first stamp
  const scan = (n: number, chunk: Uint8Array): boolean => {
    const now = Date.now();
    if (first) {
      first = false;
      if (n < OK.length || OK.compare(chunk, 0, OK.length, 0, OK.length) !== 0) {
        process.send!({
          error: `not a 200 stream: ${Buffer.from(chunk.subarray(0, Math.min(n, 80))).toString('latin1')}`,
        });
      }
      tally.attach();
    }
    for (let i = 0; i < n; i++) {
      const b = chunk[i]!;
      if (stamp >= 0) {
        const digit = b - ZERO;
        if (digit >= 0 && digit <= 9) {
          stamp = stamp * 10 + digit;
          continue;
        }
        if (++stamps === 1) due = stamp;
        stamp = -1;
      }
      if (b === NL) {
        if (lastNl) {
          tally.frames++;
          if (stamps === 1) tally.lags.push(now - due);
          stamps = 0;
          lastNl = false;
        } else lastNl = true;
        continue;
      }
      lastNl = false;
      if (b === AT) stamp = 0;
    }
    return true; // keep reading
  };
  // `onread`: the bytes go to `scan` straight from the socket, without a readable stream or a buffer per read.
  const socket = connect({
    port: Number(port),
    host: hostname,
    noDelay: true,
    onread: { buffer: READ_BUFFER, callback: scan },
  });
  socket.write(
    `GET ${pathname}${search} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAuthorization: Bearer bench\r\n` +
      'Accept: text/event-stream\r\nConnection: close\r\n\r\n',
  );
  socket.on('end', () => tally.end());
  socket.on('error', (error) => process.send!({ error: String(error) }));
}

/** node:http's client and a scan of the decoded text (see the file's comment). */
function httpReader(url: string, tally: Tally, agent: Agent): void {
  const stamp = /@(\d+)/;
  const req = request(url, { agent, headers: { authorization: 'Bearer bench', accept: 'text/event-stream' } });
  req.on('response', (res) => {
    let first = true;
    let tail = '';
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      const now = Date.now();
      if (first) {
        first = false;
        tally.attach();
      }
      const text = tail + chunk;
      let from = 0;
      let at = text.indexOf('\n\n');
      while (at !== -1) {
        tally.frames++;
        const one = text.slice(from, at);
        const m = one.includes('TEXT_MESSAGE_CONTENT') ? stamp.exec(one) : null;
        if (m) tally.lags.push(now - Number(m[1]));
        from = at + 2;
        at = text.indexOf('\n\n', from);
      }
      tail = text.slice(from);
    });
    res.on('end', () => tally.end(() => agent.destroy()));
  });
  req.on('error', (error) => process.send!({ error: String(error) }));
  req.end();
}

function runJob(job: Job): void {
  const tally = new Tally(job.n);
  const agent = job.reader === 'http' ? new Agent({ keepAlive: false, maxSockets: Infinity }) : undefined;
  for (let i = 0; i < job.n; i++) {
    const url = job.urls[i % job.urls.length]!;
    if (agent === undefined) netReader(url, tally);
    else httpReader(url, tally, agent);
  }
}

process.on('message', (m) => runJob(m as Job));
process.send!({ ready: true });
