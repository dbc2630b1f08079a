import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/**
 * Who may talk to `loopctl serve` (docs/ui.md, "Security of loopctl serve"): the server listens on 127.0.0.1
 * only, and a request is admitted when
 * 1. its `Host` is `127.0.0.1:PORT` or `localhost:PORT` (a page of another site that resolves its own name to
 *    127.0.0.1 — DNS rebinding — sends its own name);
 * 2. its `Origin`, when present, is this server's own (`http://` + the `Host`), and its `Sec-Fetch-Site`,
 *    when present, is `same-origin` or `none` (typed in the address bar): a page of another origin, another
 *    port of 127.0.0.1 included, cannot use it, though the browser would send it the cookies (the site of a
 *    cookie ignores the port);
 * 3. it carries the launch's token: in the address `loopctl serve` printed (`/?token=…`, answered with a
 *    redirect that moves it into a cookie), or in that cookie (`HttpOnly`, `SameSite=Strict`).
 * Each browser gets a principal of its own, a random id in a second cookie: its runs are invisible to others.
 */
export type Admission =
  | { readonly kind: 'admitted'; readonly principal: string; readonly cookies: readonly string[] }
  | { readonly kind: 'redirect'; readonly location: string; readonly cookies: readonly string[] }
  | { readonly kind: 'refused'; readonly status: 401 | 403; readonly code: string; readonly message: string };

/** The names of the two cookies, per port: two servers on one host (one cookie jar for all ports) stay apart. */
export const cookieNames = (port: number) => ({
  token: `loopctl_${port}_token`,
  principal: `loopctl_${port}_principal`,
});

const PRINCIPAL = /^[A-Za-z0-9_-]{22,64}$/;

/** A new launch token: 32 random bytes, base64url. */
export const newToken = (): string => randomBytes(32).toString('base64url');

/**
 * The admission rule above for one launch. `port` is read per request: with `--port 0` it is known only once
 * the server listens.
 */
export function createGuard(token: string, port: () => number): (req: IncomingMessage) => Admission {
  const expected = Buffer.from(token);
  const matches = (given: string | undefined) => {
    if (given === undefined) return false;
    const buffer = Buffer.from(given);
    return buffer.length === expected.length && timingSafeEqual(buffer, expected);
  };
  return (req) => {
    const p = port();
    const names = cookieNames(p);
    const host = (req.headers.host ?? '').toLowerCase();
    if (host !== `127.0.0.1:${p}` && host !== `localhost:${p}`) {
      return refused(403, 'forbidden_host', `Host ${JSON.stringify(host)} is not 127.0.0.1:${p} or localhost:${p}`);
    }
    const origin = req.headers.origin;
    if (origin !== undefined && origin !== `http://${host}`) {
      return refused(403, 'forbidden_origin', `Origin ${JSON.stringify(origin)} is not this server's`);
    }
    const site = req.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin' && site !== 'none') {
      return refused(403, 'forbidden_origin', `a request from another site (Sec-Fetch-Site: ${site})`);
    }
    const cookies = parseCookies(req.headers.cookie);
    const sent = cookies.get(names.principal);
    const known = sent !== undefined && PRINCIPAL.test(sent);
    // A browser without a (well-formed) principal gets a new one with this answer.
    const principal = known ? sent : randomBytes(18).toString('base64url');
    const identity = known ? [] : [cookie(names.principal, principal)];
    const url = new URL(req.url ?? '/', 'http://localhost');
    const given = url.searchParams.get('token');
    if (given !== null && req.method === 'GET' && url.pathname === '/') {
      if (!matches(given)) return refused(401, 'unauthorized', "the token is not this launch's");
      // The token leaves the address bar (and the history) for a cookie scripts cannot read.
      return { kind: 'redirect', location: '/', cookies: [cookie(names.token, token), ...identity] };
    }
    if (!matches(cookies.get(names.token))) {
      return refused(401, 'unauthorized', 'open the address loopctl serve printed (it carries the token)');
    }
    return { kind: 'admitted', principal, cookies: identity };
  };
}

const refused = (status: 401 | 403, code: string, message: string): Admission => ({
  kind: 'refused',
  status,
  code,
  message,
});

const cookie = (name: string, value: string) => `${name}=${value}; HttpOnly; SameSite=Strict; Path=/`;

/** `Cookie` header pairs; the first of a repeated name wins. */
export function parseCookies(header: string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  for (const pair of (header ?? '').split(';')) {
    const eq = pair.indexOf('=');
    if (eq < 0) continue;
    const name = pair.slice(0, eq).trim();
    if (!out.has(name)) out.set(name, pair.slice(eq + 1).trim());
  }
  return out;
}
