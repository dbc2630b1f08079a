/**
 * The SSE readers of bench/http-fanout.ts, in a child process (so the server's CPU is measured alone). On a
 * `{ urls, n }` message it opens `n` event streams (`GET urls[i % urls.length]`), reports `{ attached }` once
 * every stream has its first bytes, and `{ done, frames, lags }` once every stream ended: the SSE frames
 * received and, for every delta frame, how many ms after its schedule it arrived (each delta carries its
 * scheduled time as `@<epoch ms>`; server and readers share the machine's clock).
 */
import { Agent, request } from 'node:http';

function runJob(job: { urls: string[]; n: number }): void {
  const agent = new Agent({ keepAlive: false, maxSockets: Infinity });
  let attached = 0;
  let done = 0;
  let frames = 0;
  const lags: number[] = [];
  const stamp = /@(\d+)/;
  for (let i = 0; i < job.n; i++) {
    const req = request(job.urls[i % job.urls.length]!, {
      agent,
      headers: { authorization: 'Bearer bench', accept: 'text/event-stream' },
    });
    req.on('response', (res) => {
      let first = true;
      let tail = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        const now = Date.now();
        if (first) {
          first = false;
          if (++attached === job.n) process.send!({ attached });
        }
        const text = tail + chunk;
        let from = 0;
        let at = text.indexOf('\n\n');
        while (at !== -1) {
          frames++;
          const one = text.slice(from, at);
          const m = one.includes('TEXT_MESSAGE_CONTENT') ? stamp.exec(one) : null;
          if (m) lags.push(now - Number(m[1]));
          from = at + 2;
          at = text.indexOf('\n\n', from);
        }
        tail = text.slice(from);
      });
      res.on('end', () => {
        if (++done === job.n) {
          process.send!({ done, frames, lags });
          agent.destroy();
        }
      });
    });
    req.on('error', (error) => process.send!({ error: String(error) }));
    req.end();
  }
}

process.on('message', (m) => runJob(m as { urls: string[]; n: number }));
process.send!({ ready: true });
