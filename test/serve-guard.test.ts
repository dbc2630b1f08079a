/**
 * `loopctl serve`'s request guard and routing, in process (src/cli/serve/server.ts): the token (address, then
 * an HttpOnly SameSite=Strict cookie), Host and Origin checks, one principal per browser, the web app's files
 * with their headers, `GET /api/info`, and loopctl/http under `/api` scoped by the principal.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServeApp } from '../src/cli/serve/server.js';
import { loadWebApp, WebAppMissingError } from '../src/cli/serve/static.js';
import { defineAgent, localRuns } from '../src/index.js';
import { gate, scriptedModel } from '../src/testing/index.js';

const TOKEN = 'x'.repeat(43);
const INFO = { agent: 'helper', model: 'scripted', folder: '/tmp/f', tools: ['read_file'], version: '0.1.0' };
let server: Server;
let port: number;
let web: string;
const hold = gate();

beforeAll(async () => {
  web = mkdtempSync(path.join(tmpdir(), 'loopctl-web-'));
  mkdirSync(path.join(web, 'assets'));
  writeFileSync(path.join(web, 'index.html'), '<!doctype html><title>loopctl</title>');
  writeFileSync(path.join(web, 'assets', 'index-abc.js'), 'console.log(1)');
  const model = scriptedModel([{ text: ['Hel', 'lo'], hold: hold.wait$ }, 'Second.']);
  const runs = localRuns({ agents: { helper: defineAgent({ name: 'helper', instructions: 'i', model }) } });
  server = createServer(createServeApp({ runs, web: loadWebApp(web), info: INFO, token: TOKEN, port: () => port }));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  hold.open();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  rmSync(web, { recursive: true, force: true });
});

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** One request with the headers a test chooses (Host included); the body of an SSE answer up to `until`. */
function call(method: string, p: string, headers: Record<string, string> = {}, body?: unknown, until?: string) {
  return new Promise<Answer>((resolve, reject) => {
    const json = body === undefined ? undefined : JSON.stringify(body);
    const req = request({
      host: '127.0.0.1',
      port,
      method,
      path: p,
      setHost: false,
      headers: {
        Host: `127.0.0.1:${port}`,
        ...(json ? { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(json)) } : {}),
        ...headers,
      },
    });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        text += d;
        if (until !== undefined && text.includes(until)) {
          res.destroy();
          resolve({ status: res.statusCode!, headers: res.headers, body: text });
        }
      });
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(json);
  });
}

/** Opens the printed address: the cookies the redirect sets, as a Cookie header. */
async function login(): Promise<{ cookie: string; principal: string; setCookie: string[] }> {
  const answer = await call('GET', `/?token=${TOKEN}`);
  expect(answer.status).toBe(303);
  expect(answer.headers.location).toBe('/');
  const setCookie = answer.headers['set-cookie']!;
  const cookie = setCookie.map((c) => c.split(';')[0]).join('; ');
  const principal = /_principal=([^;]+)/.exec(cookie)![1]!;
  return { cookie, principal, setCookie };
}

const RUN_INPUT = {
  threadId: 't1',
  runId: 'client',
  messages: [{ id: 'u1', role: 'user', content: 'hi' }],
  tools: [],
  context: [],
  state: {},
  forwardedProps: {},
};

describe('loopctl serve: the token', () => {
  it('the printed address sets token and principal as HttpOnly SameSite=Strict cookies, then redirects', async () => {
    const { setCookie } = await login();
    expect(setCookie).toEqual([
      `loopctl_${port}_token=${TOKEN}; HttpOnly; SameSite=Strict; Path=/`,
      expect.stringMatching(
        new RegExp(`^loopctl_${port}_principal=[A-Za-z0-9_-]{24}; HttpOnly; SameSite=Strict; Path=/$`),
      ),
    ]);
  });

  it('without the token (or with another) every path is refused with 401; pages as text, the API as JSON', async () => {
    expect(await call('GET', '/')).toMatchObject({ status: 401, body: expect.stringContaining('open the address') });
    expect((await call('GET', '/?token=nope')).status).toBe(401);
    expect((await call('GET', `/?token=${TOKEN}x`)).status).toBe(401);
    const api = await call('POST', '/api/agents/helper/runs', {}, RUN_INPUT);
    expect(api.status).toBe(401);
    expect(JSON.parse(api.body)).toEqual({ error: { code: 'unauthorized', message: expect.any(String) } });
    const forged = `loopctl_${port}_token=${'y'.repeat(43)}`;
    expect((await call('GET', '/', { Cookie: forged })).status).toBe(401);
    expect((await call('GET', '/api/info', { Cookie: `loopctl_${port + 1}_token=${TOKEN}` })).status).toBe(401);
  });

  it('with the cookie: the page (with its policy), its assets, /api/info; other paths 404', async () => {
    const { cookie } = await login();
    const page = await call('GET', '/', { Cookie: cookie });
    expect(page.status).toBe(200);
    expect(page.body).toBe('<!doctype html><title>loopctl</title>');
    expect(page.headers).toMatchObject({
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'x-frame-options': 'DENY',
      'content-security-policy': expect.stringContaining("default-src 'self'"),
    });
    const asset = await call('GET', '/assets/index-abc.js', { Cookie: cookie });
    expect(asset).toMatchObject({ status: 200, body: 'console.log(1)' });
    expect(asset.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(JSON.parse((await call('GET', '/api/info', { Cookie: cookie })).body)).toEqual(INFO);
    expect((await call('GET', '/../package.json', { Cookie: cookie })).status).toBe(404);
    expect((await call('GET', '/assets/%2e%2e/%2e%2e/package.json', { Cookie: cookie })).status).toBe(404);
    expect((await call('GET', '/assets/..%2f..%2fpackage.json', { Cookie: cookie })).status).toBe(404);
    expect((await call('POST', '/', { Cookie: cookie })).status).toBe(404);
    expect((await call('GET', '/api/nothing', { Cookie: cookie })).status).toBe(404);
  });
});

describe('loopctl serve: Host and Origin', () => {
  it('a foreign Host is refused (403) even with the token: DNS rebinding', async () => {
    const { cookie } = await login();
    for (const host of [`evil.test:${port}`, `127.0.0.1:${port + 1}`, '127.0.0.1', `[::1]:${port}`, '']) {
      const answer = await call('GET', `/?token=${TOKEN}`, { Host: host, Cookie: cookie });
      expect([host, answer.status]).toEqual([host, 403]);
    }
    expect((await call('GET', '/', { Host: `LOCALHOST:${port}`, Cookie: cookie })).status).toBe(200);
  });

  it("an Origin that is not the server's own, or a request from another site, is refused (403)", async () => {
    const { cookie } = await login();
    const post = (headers: Record<string, string>) =>
      call('POST', '/api/agents/helper/runs', { Cookie: cookie, ...headers }, RUN_INPUT);
    for (const origin of [`http://127.0.0.1:${port + 1}`, 'http://evil.test', 'null', `https://127.0.0.1:${port}`]) {
      const answer = await post({ Origin: origin });
      expect([origin, answer.status, JSON.parse(answer.body).error.code]).toEqual([origin, 403, 'forbidden_origin']);
    }
    for (const site of ['same-site', 'cross-site']) expect((await post({ 'Sec-Fetch-Site': site })).status).toBe(403);
    expect((await call('GET', '/', { Cookie: cookie, Origin: `http://localhost:${port}` })).status).toBe(403);
    expect((await call('GET', '/', { Cookie: cookie, Origin: `http://127.0.0.1:${port}` })).status).toBe(200);
    expect((await call('GET', '/', { Cookie: cookie, 'Sec-Fetch-Site': 'same-origin' })).status).toBe(200);
    expect((await call('GET', '/', { Cookie: cookie, 'Sec-Fetch-Site': 'none' })).status).toBe(200);
  });
});

describe('loopctl serve: principals', () => {
  it("each browser is a principal of its own: another's run is 404 for events, cancel and steering", async () => {
    const alice = await login();
    const bob = await login();
    expect(alice.principal).not.toBe(bob.principal);
    const origin = { Origin: `http://127.0.0.1:${port}` };
    const started = await call(
      'POST',
      '/api/agents/helper/runs',
      { Cookie: alice.cookie, ...origin },
      RUN_INPUT,
      'Hel',
    );
    expect(started.status).toBe(200);
    const runId = decodeURIComponent(started.headers['loopctl-run-id'] as string);
    const events = `/api/runs/${encodeURIComponent(runId)}/events?threadId=t1`;
    expect((await call('GET', events, { Cookie: bob.cookie })).status).toBe(404);
    expect((await call('POST', `/api/runs/${runId}/cancel`, { Cookie: bob.cookie, ...origin }, {})).status).toBe(404);
    expect((await call('POST', `/api/runs/${runId}/steering`, { Cookie: bob.cookie }, { text: 'x' })).status).toBe(404);
    // Alice's own browser sees it, and it still runs.
    // A late joiner's replay is compacted: the deltas so far arrive as one.
    const mine = await call('GET', events, { Cookie: alice.cookie }, undefined, '"delta":"Hello"');
    expect(mine.status).toBe(200);
    expect(mine.body).toContain('"type":"RUN_STARTED"');
    const cancel = await call('POST', `/api/runs/${runId}/cancel`, { Cookie: alice.cookie, ...origin }, {});
    expect([cancel.status, JSON.parse(cancel.body)]).toEqual([200, { cancelled: true }]);
  });

  it('a malformed principal cookie is replaced by a new principal', async () => {
    const { cookie } = await login();
    const token = cookie.split('; ')[0]!;
    const answer = await call('GET', '/', { Cookie: `${token}; loopctl_${port}_principal=bad` });
    expect(answer.status).toBe(200);
    expect(answer.headers['set-cookie']).toEqual([
      expect.stringMatching(new RegExp(`^loopctl_${port}_principal=[\\w-]{24};`)),
    ]);
  });
});

describe('loopctl serve: the web app', () => {
  it('a folder without index.html is a WebAppMissingError saying to build', () => {
    expect(() => loadWebApp(path.join(web, 'assets'))).toThrow(WebAppMissingError);
    expect(() => loadWebApp(path.join(web, 'assets'))).toThrow(/index\.html is missing \(run npm run build\)$/);
  });
});
