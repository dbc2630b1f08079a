import type { IncomingMessage, ServerResponse } from 'node:http';
import { type Observable, Subject, map, takeUntil, tap } from 'rxjs';
import { parseEventId, toAgUiFrames, type EventCursor } from '../ag-ui/frames.js';
import { DEFAULT_CANCEL_REASON } from '../cancel/cancel-signal.js';
import { commandOf } from '../control/command.js';
import { ConfigurationError } from '../errors.js';
import { NotSupportedError } from '../runs/errors.js';
import { traceCarrierOf } from '../runs/trace-carrier.js';
import type { Runs } from '../runs/types.js';
import { parseWith, readJson } from './body.js';
import { HttpError, toHttpError } from './http-error.js';
import { matchRoute, type RouteName } from './routes.js';
import { mapRunInput } from './run-input.js';
import { EventsQuerySchema, StartQuerySchema } from './schemas.js';
import { SharedFrames } from './shared-frames.js';
import { SseWriter, encodeFrame } from './sse.js';

/** Options of {@link createHandler}. */
export interface HandlerOptions {
  /** The runs the routes drive (`localRuns()`, or another implementation of `Runs`). */
  readonly runs: Runs;
  /**
   * Who is asking: a non-empty principal id for the request, or a throw/rejection (401). Every route is
   * scoped by it: another principal's run answers 404, as an unknown one does.
   */
  readonly authorize: (req: IncomingMessage) => string | PromiseLike<string>;
  /** The largest request body read, in bytes; a larger one is a 413. Default 1 MiB. */
  readonly maxBodyBytes?: number;
  /** Bytes an event stream may have waiting for a slow reader before its connection is closed. Default 1 MiB. */
  readonly maxBufferedBytes?: number;
  /**
   * When a client closes an event stream of a live run: `'continue'` (default) lets the run go on (the
   * client may re-attach with `Last-Event-ID`); `'cancel'` cancels it with {@link DISCONNECTED_REASON}.
   * A connection the server closed (a slow reader) never cancels.
   */
  readonly disconnect?: 'continue' | 'cancel';
  /**
   * A path prefix to strip, for frameworks that hand over the full URL (Fastify, Hono): with `'/api'`,
   * `/api/runs/r1/cancel` is the cancel route and `/elsewhere` goes to `next`. Express's `app.use('/api', …)`
   * strips it already. Default `''`.
   */
  readonly basePath?: string;
}

/** A Node request handler; `next` (Express, Connect) gets the requests whose path is no route of the handler. */
export type NodeHandler = (req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void) => void;

/** The reason of a run cancelled because its client went away (`disconnect: 'cancel'`). */
export const DISCONNECTED_REASON: { readonly type: 'client_disconnected' } = Object.freeze({
  type: 'client_disconnected',
});

const MiB = 1024 * 1024;
/** What a run's shared stream keeps of the frames it sent, for readers that join it (SharedFrames). */
const SHARED_HISTORY_BYTES = MiB;

/** The header of an event stream whose run waits for a worker (`waiting`); absent otherwise. */
const RUN_STATE_HEADER = 'Loopctl-Run-State';
/** The comment a waiting run's event stream starts with. */
const WAITING_COMMENT = 'waiting for a worker: no worker has taken this run yet (cancel ends it at once)';

interface Context {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly url: URL;
  readonly params: Readonly<Record<string, string>>;
  readonly principal: string;
}

/**
 * The HTTP face of {@link Runs} (docs/ui.md): AG-UI over SSE for a run's events, JSON for the rest. Works
 * with `node:http`, Express (`app.use('/api', handler)`), Fastify (the raw request and response) and
 * `@hono/node-server` (`c.env.incoming` / `c.env.outgoing`). A path that is no route goes to `next` when
 * given (so static files or a token check can sit around it), else 404.
 *
 * @throws {ConfigurationError} for a bad option, naming it.
 */
export function createHandler(options: HandlerOptions): NodeHandler {
  if (options === null || typeof options !== 'object') throw new ConfigurationError('options', 'must be an object');
  const {
    runs,
    authorize,
    maxBodyBytes = MiB,
    maxBufferedBytes = MiB,
    disconnect = 'continue',
    basePath = '',
  } = options;
  for (const method of [
    'start',
    'events',
    'cancel',
    'stop',
    'steer',
    'withdraw',
    'decide',
    'cancelToolCall',
  ] as const) {
    if (typeof runs?.[method] !== 'function')
      throw new ConfigurationError(`options.runs.${method}`, 'must be a function');
  }
  if (typeof authorize !== 'function') throw new ConfigurationError('options.authorize', 'must be a function');
  for (const [field, value] of [
    ['maxBodyBytes', maxBodyBytes],
    ['maxBufferedBytes', maxBufferedBytes],
  ] as const) {
    if (!Number.isSafeInteger(value) || value < 1)
      throw new ConfigurationError(`options.${field}`, 'must be a positive integer');
  }
  if (disconnect !== 'continue' && disconnect !== 'cancel') {
    throw new ConfigurationError('options.disconnect', "must be 'continue' or 'cancel'");
  }
  if (typeof basePath !== 'string' || (basePath !== '' && !/^\/.*[^/]$/.test(basePath))) {
    throw new ConfigurationError('options.basePath', "must be '' or a path starting with '/' and not ending with it");
  }

  const shared = new SharedFrames(runs, SHARED_HISTORY_BYTES);

  /**
   * Streams a run's AG-UI frames after `after`; settles when the stream ends or the client leaves. A run that
   * waits for a worker (`runs.state`, where the runs have it) is answered at once: headers with
   * `Loopctl-Run-State: waiting` and a comment, so its reader knows the run id and can cancel it.
   */
  async function stream(
    ctx: Context,
    runId: string,
    threadId: string,
    after: EventCursor | undefined,
    headers: Record<string, string> = {},
  ): Promise<void> {
    const { res, principal } = ctx;
    const place = runs.state === undefined ? undefined : await runs.state(runId, principal);
    const writer = new SseWriter(res, maxBufferedBytes, { 'Loopctl-Run-Id': encodeURIComponent(runId), ...headers });
    if (place === 'waiting') writer.open({ [RUN_STATE_HEADER]: 'waiting' }, WAITING_COMMENT);
    const stop$ = new Subject<void>();
    let runEnded = false; // the run's events completed: its terminal event was written
    return new Promise<void>((resolve) => {
      const left = () => {
        stop$.next();
        if (!runEnded && !writer.overflowed && disconnect === 'cancel') {
          runs.cancel(runId, DISCONNECTED_REASON, principal).catch(() => undefined);
        }
        resolve();
      };
      if (res.destroyed || res.socket?.destroyed) return left();
      res.on('close', left);
      // From the start: one mapping and encoding shared by every such reader of the run; after a cursor: its own.
      const frames: Observable<string> =
        after === undefined
          ? shared.frames(runId, principal, threadId)
          : runs.events(runId, { principal }).pipe(toAgUiFrames({ threadId, after }), map(encodeFrame));
      frames.pipe(tap({ complete: () => (runEnded = true) }), takeUntil(stop$)).subscribe({
        next: (text) => {
          if (!writer.writeEncoded(text)) stop$.next();
        },
        error: (error: unknown) => {
          runEnded = true; // nothing left to cancel for: the run is unknown or its stream failed
          if (writer.started) res.destroy();
          else respond(res, toHttpError(error));
          resolve();
        },
        complete: () => {
          if (runEnded) writer.end();
          resolve();
        },
      });
      writer.arm(); // what the subscription replayed at once is out; live frames now count against the limit
    });
  }

  const body = (ctx: Context) => readJson(ctx.req, maxBodyBytes);

  const ROUTE_HANDLERS: Record<RouteName, (ctx: Context) => Promise<void>> = {
    async start(ctx) {
      const { ifBusy } = parseWith(StartQuerySchema, Object.fromEntries(ctx.url.searchParams), 'query');
      const input = mapRunInput(await body(ctx));
      const rename = (field: string) => {
        const m = /^input\[(\d+)\](.*)$/.exec(field);
        if (m) return `messages[${input.messageIndex[Number(m[1])] ?? m[1]}]${m[2]}`;
        if (field === 'frontendTools' || field.startsWith('options.frontendTools'))
          return field.replace(/^(options\.)?frontendTools/, 'tools');
        const d = /^decisions\.(.*)$/.exec(field);
        if (d && input.resumeIndex?.[d[1]!] !== undefined) return `resume[${input.resumeIndex[d[1]!]}].payload`;
        return field === 'input' ? 'messages' : field;
      };
      const frontendTools = input.frontendTools !== undefined ? { frontendTools: input.frontendTools } : {};
      // The caller's W3C trace context goes with the start; a traced Runs answers its own, written back.
      const trace = traceCarrierOf(ctx.req.headers['traceparent'], ctx.req.headers['tracestate']);
      let started: { runId: string; steeringId?: string; traceparent?: string };
      try {
        if (input.decisions !== undefined) {
          // AG-UI's interrupt resume: the thread's suspended run goes on with these decisions.
          if (runs.resume === undefined) throw new NotSupportedError('resume', 'these runs cannot resume a run');
          started = await runs.resume({
            agent: ctx.params['agent']!,
            threadId: input.threadId,
            input: input.items,
            decisions: input.decisions,
            principal: ctx.principal,
            ...(trace !== undefined ? { trace } : {}),
            ...frontendTools,
          });
        } else
          started = await runs.start({
            agent: ctx.params['agent']!,
            threadId: input.threadId,
            input: input.items,
            principal: ctx.principal,
            ifBusy,
            ...(trace !== undefined ? { trace } : {}),
            ...frontendTools,
          });
      } catch (error) {
        throw toHttpError(error, rename);
      }
      const { runId, steeringId, traceparent } = started;
      const headers: Record<string, string> = typeof traceparent === 'string' ? { traceparent } : {};
      if (steeringId !== undefined) return json(ctx.res, 202, { runId, steeringId }, headers);
      await stream(ctx, runId, input.threadId, undefined, headers);
    },

    async events(ctx) {
      const query = parseWith(EventsQuerySchema, Object.fromEntries(ctx.url.searchParams), 'query');
      const header = ctx.req.headers['last-event-id'];
      const [field, id] = typeof header === 'string' ? ['Last-Event-ID', header] : ['lastEventId', query.lastEventId];
      const after = id === undefined || id === '' ? undefined : parseEventId(id);
      if (id !== undefined && id !== '' && after === undefined) {
        throw new HttpError(
          400,
          'bad_request',
          `${field}: not an event id of this stream ("<seq>" or "<seq>:<k>")`,
          field,
        );
      }
      await stream(ctx, ctx.params['runId']!, query.threadId, after);
    },

    async cancel(ctx) {
      const { reason } = commandOf('cancel', await body(ctx), 'body');
      const cancelled = await runs.cancel(
        ctx.params['runId']!,
        reason === undefined ? DEFAULT_CANCEL_REASON : reason,
        ctx.principal,
      );
      json(ctx.res, 200, { cancelled });
    },

    async stop(ctx) {
      const { op: _op, ...opts } = commandOf('stop', await body(ctx), 'body');
      json(ctx.res, 200, { stopped: await runs.stop(ctx.params['runId']!, opts, ctx.principal) });
    },

    async steer(ctx) {
      const { text } = commandOf('steer', await body(ctx), 'body');
      json(ctx.res, 201, await runs.steer(ctx.params['runId']!, text, ctx.principal));
    },

    async withdraw(ctx) {
      const { steeringId } = commandOf('withdraw', { steeringId: ctx.params['steeringId'] });
      const withdrawn = await runs.withdraw(ctx.params['runId']!, steeringId, ctx.principal);
      json(ctx.res, 200, { withdrawn });
    },

    async decide(ctx) {
      const fields = (await body(ctx)) ?? {};
      const { op: _op, callId, ...decision } = commandOf('decide', withParam(fields, 'callId', ctx), 'body');
      const decided = await runs.decide(ctx.params['runId']!, callId, decision, ctx.principal);
      json(ctx.res, 200, { decided });
    },

    async cancelToolCall(ctx) {
      const fields = (await body(ctx)) ?? {};
      const { callId, reason } = commandOf('cancel_tool_call', withParam(fields, 'callId', ctx), 'body');
      const cancelled = await runs.cancelToolCall(
        ctx.params['runId']!,
        callId,
        reason === undefined ? DEFAULT_CANCEL_REASON : reason,
        ctx.principal,
      );
      json(ctx.res, 200, { cancelled });
    },
  };

  async function handle(req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void): Promise<void> {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://localhost');
    } catch {
      return respond(res, new HttpError(400, 'bad_request', 'the request URL cannot be read', 'url'));
    }
    const path = url.pathname.startsWith(`${basePath}/`) ? url.pathname.slice(basePath.length) : undefined;
    const match = path === undefined ? undefined : matchRoute(req.method ?? 'GET', path);
    if (match === undefined) {
      if (next) return next();
      return respond(res, new HttpError(404, 'not_found', `no route ${req.method} ${url.pathname}`));
    }
    if ('allow' in match) {
      res.setHeader('Allow', match.allow.join(', '));
      return respond(res, new HttpError(405, 'method_not_allowed', `${req.method} is not allowed here`));
    }
    try {
      const principal = await principalOf(req);
      await ROUTE_HANDLERS[match.name]({ req, res, url, params: match.params, principal });
    } catch (error) {
      respond(res, toHttpError(error));
    }
  }

  async function principalOf(req: IncomingMessage): Promise<string> {
    let principal: unknown;
    try {
      principal = await authorize(req);
    } catch {
      principal = undefined;
    }
    if (typeof principal !== 'string' || principal === '') throw new HttpError(401, 'unauthorized', 'not authorized');
    return principal;
  }

  return (req, res, next) => {
    void handle(req, res, next);
  };
}

/**
 * A body's fields with the route's path parameter `name` (`callId`): a body that names it too is refused (the
 * path says which call), one that is no object is left for the command's parse to refuse.
 */
function withParam(fields: unknown, name: string, ctx: Context): unknown {
  if (fields === null || typeof fields !== 'object' || Array.isArray(fields)) return fields;
  if (Object.hasOwn(fields, name)) throw new HttpError(400, 'bad_request', `${name}: is given by the path`, name);
  return { ...fields, [name]: ctx.params[name] };
}

function json(res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(value);
  res.writeHead(status, {
    ...headers,
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
  });
  res.end(text);
}

/** An error answer; once an event stream started, only closing the connection is left. */
function respond(res: ServerResponse, error: HttpError): void {
  if (res.headersSent) return void res.destroy();
  if (res.destroyed) return;
  // The rest of a refused body is not read: close the connection rather than drain it.
  if (error.status === 413) res.setHeader('Connection', 'close');
  json(res, error.status, error.body);
}
