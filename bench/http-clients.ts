/**
 * The SSE clients of bench/http.ts, in a child process (so the server's CPU is measured alone). On a
 * `{ url, n, body, holdFrames }` message it opens `n` streams at once (`POST url`, one thread each),
 * counts the SSE frames each receives, reports `{ held }` once every stream has `holdFrames` frames and
 * `{ done, frames }` once every stream ended.
 */
import { Agent, request } from 'node:http';

interface Job {
  readonly url: string;
  readonly n: number;
  readonly body: (i: number) => string;
  readonly holdFrames: number;
}

function runJob(job: { url: string; n: number; holdFrames: number; bodyTemplate: string }): void {
  const agent = new Agent({ keepAlive: false, maxSockets: Infinity });
  let held = 0;
  let done = 0;
  let frames = 0;
  const jobOf: Job = { ...job, body: (i) => job.bodyTemplate.replace('__THREAD__', `t${i}`) };
  for (let i = 0; i < jobOf.n; i++) {
    const req = request(
      jobOf.url,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', authorization: 'Bearer bench' },
      },
      (res) => {
        let mine = 0;
        let reported = false;
        res.setEncoding('utf8');
        let tail = '';
        res.on('data', (chunk: string) => {
          const text = tail + chunk;
          let at = text.indexOf('\n\n');
          let from = 0;
          while (at !== -1) {
            mine++;
            from = at + 2;
            at = text.indexOf('\n\n', from);
          }
          tail = text.slice(from);
          if (!reported && mine >= jobOf.holdFrames) {
            reported = true;
            if (++held === jobOf.n) process.send!({ held });
          }
        });
        res.on('end', () => {
          frames += mine;
          if (++done === jobOf.n) {
            process.send!({ done, frames });
            agent.destroy();
          }
        });
      },
    );
    req.on('error', (error) => process.send!({ error: String(error) }));
    req.end(jobOf.body(i));
  }
}

process.on('message', (m) => runJob(m as { url: string; n: number; holdFrames: number; bodyTemplate: string }));
process.send!({ ready: true });
