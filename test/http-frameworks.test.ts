import { createAdaptorServer, type HttpBindings } from '@hono/node-server';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import { defineAgent, localRuns } from '../src/index.js';
import { createHandler, type HandlerOptions, type NodeHandler } from '../src/http/index.js';
import { scriptedModel } from '../src/testing/index.js';
import { checkAgUiStream } from './support/ag-ui.js';
import { bearer, listen, readStream, request, type Listening } from './support/http.js';

/**
 * The one handler inside each framework docs/ui.md names: node:http, Express, Fastify (raw request and
 * response), Hono on @hono/node-server. Each serves a run as an AG-UI stream, takes JSON bodies, and leaves
 * the paths that are not its routes to the framework.
 */

let server: Listening | undefined;
let closeExtra: (() => Promise<void>) | undefined;
afterEach(async () => {
  await server?.close();
  await closeExtra?.();
  server = undefined;
  closeExtra = undefined;
});

function makeHandler(options: Partial<HandlerOptions> = {}): NodeHandler {
  const model = scriptedModel([{ text: ['Hello ', 'there.'] }, 'Again.']);
  const runs = localRuns({ agents: { helper: defineAgent({ name: 'helper', instructions: 'i', model }) } });
  return createHandler({ runs, authorize: bearer, ...options });
}

/** The same checks against `<base>/…` (the handler) and `<root>/health` (the framework's own route). */
async function exercise(root: string, base: string) {
  const body = {
    threadId: 't',
    runId: 'x',
    messages: [{ id: 'u1', role: 'user', content: 'Hi' }],
    tools: [],
    context: [],
  };
  const run = await readStream(`${base}/agents/helper/runs`, { principal: 'alice', body });
  expect(run.status).toBe(200);
  await checkAgUiStream(run.frames.map((f) => f.event));
  expect(run.frames.at(-1)!.event).toMatchObject({ type: 'RUN_FINISHED', result: { output: 'Hello there.' } });
  const runId = decodeURIComponent(run.headers.get('loopctl-run-id')!);
  // JSON bodies reach the handler (a finished run: cancel answers false, steering is refused).
  expect(await request(`${base}/runs/${runId}/cancel`, { principal: 'alice', body: { reason: 'x' } })).toMatchObject({
    status: 200,
    body: { cancelled: false },
  });
  expect(await request(`${base}/runs/${runId}/steering`, { principal: 'alice', body: { text: 'late' } })).toMatchObject(
    {
      status: 409,
      body: { error: { code: 'run_not_live' } },
    },
  );
  expect(await request(`${base}/runs/${runId}/steering`, { principal: 'alice', body: {} })).toMatchObject({
    status: 400,
    body: { error: { field: 'text' } },
  });
  // Re-attach.
  const again = await readStream(`${base}/runs/${runId}/events?threadId=t`, {
    principal: 'alice',
    lastEventId: run.frames[3]!.id!,
  });
  expect(again.frames).toEqual(run.frames.slice(4));
  expect(await request(`${root}/health`)).toMatchObject({ status: 200, body: { ok: true } });
}

describe('createHandler in each framework', () => {
  it('node:http', async () => {
    const handler = makeHandler();
    server = await listen((req, res) => {
      if (req.url === '/health') return void res.end('{"ok":true}');
      handler(req, res);
    });
    await exercise(server.url, server.url);
    expect(await request(`${server.url}/other`, { principal: 'alice' })).toMatchObject({ status: 404 });
  });

  it('Express 5: app.use(path, handler); what is no route goes to next()', async () => {
    const app = express();
    app.use('/api', makeHandler());
    app.get('/api/health-after', (_req, res) => void res.json({ ok: true })); // reached through next()
    app.get('/health', (_req, res) => void res.json({ ok: true }));
    server = await listen(app as never);
    await exercise(server.url, `${server.url}/api`);
    expect(await request(`${server.url}/api/health-after`)).toMatchObject({ status: 200, body: { ok: true } });
  });

  it('Express 5 with express.json() in front: the parsed body is taken as it is', async () => {
    const app = express();
    app.use(express.json());
    app.use('/api', makeHandler());
    app.get('/health', (_req, res) => void res.json({ ok: true }));
    server = await listen(app as never);
    await exercise(server.url, `${server.url}/api`);
  });

  it('Fastify 5: the raw request and response, a body parser that leaves the body unread, basePath', async () => {
    const handler = makeHandler({ basePath: '/api' });
    const app = Fastify();
    app.get('/health', async () => ({ ok: true }));
    await app.register(
      async (api) => {
        api.removeAllContentTypeParsers();
        api.addContentTypeParser('*', (_req, _payload, done) => done(null));
        api.all('/*', (req, reply) => {
          reply.hijack();
          handler(req.raw, reply.raw);
        });
      },
      { prefix: '/api' },
    );
    await app.listen({ port: 0, host: '127.0.0.1' });
    closeExtra = () => app.close();
    const { port } = app.server.address() as { port: number };
    const root = `http://127.0.0.1:${port}`;
    await exercise(root, `${root}/api`);
  });

  it('Hono on @hono/node-server: c.env.incoming / c.env.outgoing and RESPONSE_ALREADY_SENT', async () => {
    const handler = makeHandler({ basePath: '/api' });
    const app = new Hono<{ Bindings: HttpBindings }>();
    app.get('/health', (c) => c.json({ ok: true }));
    app.all('/api/*', (c) => {
      handler(c.env.incoming, c.env.outgoing);
      return RESPONSE_ALREADY_SENT;
    });
    server = await listen(createAdaptorServer({ fetch: app.fetch }) as never);
    await exercise(server.url, `${server.url}/api`);
  });
});
