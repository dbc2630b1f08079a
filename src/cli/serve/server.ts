import type { IncomingMessage, ServerResponse } from 'node:http';
import { createHandler } from '../../http/index.js';
import type { Runs } from '../../runs/types.js';
import { createGuard } from './guard.js';
import { serveFile, type WebApp } from './static.js';

/** What the page shows about the server (`GET /api/info`). */
export interface ServeInfo {
  /** The agent the page starts runs of. */
  readonly agent: string;
  /** The model line of the CLI's header (`offline model (rule-based, …)`, `gpt-4o-mini (Chat Completions at …)`). */
  readonly model: string;
  readonly folder: string;
  readonly tools: readonly string[];
  readonly version: string;
  /** `serve --confirm`: write_file and run_shell calls wait for Approve/Reject in the page (absent: false). */
  readonly confirm?: boolean;
  /**
   * The agent whose write_file and run_shell calls ask first (`loopctl-ask`), which the page's setting "Ask
   * before writes and shell commands" starts instead of {@link agent}. Absent with `--confirm` (every run asks
   * already), `--queue` (the workers run only `agent`) and when no tool would ask.
   */
  readonly askingAgent?: string;
  /** `serve --queue`: the queue's name; the page then asks `GET /api/queue` how the queue is. */
  readonly queue?: string;
}

/** What `GET /api/queue` answers with `serve --queue` (a 503 `queue_unavailable` while Redis does not answer). */
export interface QueueStatus {
  /** The queue's name. */
  readonly name: string;
  /** How many worker processes take its runs now. */
  readonly workers: number;
  /** The command that starts one (`loopctl worker --queue <url>`, the password hidden). */
  readonly start: string;
}

/** What {@link createServeApp} serves. */
export interface ServeAppOptions {
  readonly runs: Runs;
  readonly web: WebApp;
  readonly info: ServeInfo;
  /** The launch's token (in the printed address, then in a cookie). */
  readonly token: string;
  /** The port the server listens on (read per request: with `--port 0` it is known once listening). */
  readonly port: () => number;
  /**
   * `serve --queue`: how the queue is, for `GET /api/queue`; rejects with an error whose `code` is
   * `queue_unavailable` (its message in words) while Redis does not answer.
   */
  readonly queue?: () => Promise<QueueStatus>;
}

/** Where loopctl/http is mounted. */
export const API_PATH = '/api';

/**
 * The request listener of `loopctl serve`: every request passes the guard (Host, Origin, token; see
 * ./guard.ts), then `/api/info`, loopctl/http under `/api` (principal: the browser's cookie), or the web app's
 * files. Every answer says `nosniff`, `no-referrer` and no framing.
 */
export function createServeApp(options: ServeAppOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const { runs, web, info, token, port, queue } = options;
  const guard = createGuard(token, port);
  const principals = new WeakMap<IncomingMessage, string>();
  const api = createHandler({
    runs,
    basePath: API_PATH,
    authorize: (req) => principals.get(req) ?? Promise.reject(new Error('no principal')),
  });
  return (req, res) => {
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.setHeader('X-Frame-Options', 'DENY');
    const pathname = new URL(req.url ?? '/', 'http://localhost').pathname;
    const isApi = pathname === API_PATH || pathname.startsWith(`${API_PATH}/`);
    const admission = guard(req);
    if (admission.kind === 'refused') {
      const { status, code, message } = admission;
      if (isApi)
        return send(res, status, 'application/json; charset=utf-8', JSON.stringify({ error: { code, message } }));
      return send(res, status, 'text/plain; charset=utf-8', `loopctl serve: ${message}\n`);
    }
    if (admission.cookies.length > 0) res.setHeader('Set-Cookie', [...admission.cookies]);
    if (admission.kind === 'redirect') {
      res.setHeader('Location', admission.location);
      return send(res, 303, 'text/plain; charset=utf-8', '');
    }
    principals.set(req, admission.principal);
    if (pathname === `${API_PATH}/info`) {
      if (req.method !== 'GET') return send(res, 405, 'application/json; charset=utf-8', methodNotAllowed);
      return send(res, 200, 'application/json; charset=utf-8', JSON.stringify(info), 'no-store');
    }
    if (pathname === `${API_PATH}/queue` && queue !== undefined) {
      if (req.method !== 'GET') return send(res, 405, 'application/json; charset=utf-8', methodNotAllowed);
      return void queueAnswer(queue).then(([status, body]) =>
        send(res, status, 'application/json; charset=utf-8', JSON.stringify(body)),
      );
    }
    if (isApi) return api(req, res);
    if ((req.method === 'GET' || req.method === 'HEAD') && serveFile(web, req, res, pathname)) return;
    send(res, 404, 'text/plain; charset=utf-8', `loopctl serve: no page ${pathname}\n`);
  };
}

/** `GET /api/queue`'s status and body: the queue's status, or its outage (503) in words. */
async function queueAnswer(queue: () => Promise<QueueStatus>): Promise<[number, unknown]> {
  try {
    return [200, await queue()];
  } catch (error) {
    const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
    if (code === 'queue_unavailable' && typeof message === 'string') return [503, { error: { code, message } }];
    return [500, { error: { code: 'internal_error', message: 'the queue could not be asked' } }];
  }
}

const methodNotAllowed = JSON.stringify({ error: { code: 'method_not_allowed', message: 'only GET is allowed here' } });

function send(res: ServerResponse, status: number, type: string, body: string, cache = 'no-store'): void {
  res.writeHead(status, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body), 'Cache-Control': cache });
  res.end(body);
}
