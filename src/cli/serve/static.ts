import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The web app's files, read once at start-up: a request can only ever name one of them. */
export interface WebApp {
  readonly root: string;
  readonly files: ReadonlyMap<string, WebFile>;
}

interface WebFile {
  readonly body: Buffer;
  readonly type: string;
  /** Vite's hashed assets never change under their name. */
  readonly immutable: boolean;
}

/** The web app is not built: `dist/web/index.html` is missing (a checkout where `npm run build` did not run). */
export class WebAppMissingError extends Error {
  override readonly name = 'WebAppMissingError';
  constructor(readonly root: string) {
    super(`the web app is not built: ${path.join(root, 'index.html')} is missing (run npm run build)`);
  }
}

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

/**
 * `dist/web/` of the loopctl package this module belongs to: the nearest folder above it whose package.json
 * is loopctl's (the same from `dist/cli/serve/` and from `src/cli/serve/`).
 */
export function defaultWebRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = path.join(dir, 'package.json');
    if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'loopctl') {
      return path.join(dir, 'dist/web');
    }
    const up = path.dirname(dir);
    if (up === dir) return path.resolve('dist/web');
    dir = up;
  }
}

/**
 * Reads the built web app under `root` (every file, by its URL path; `/` is `index.html`).
 * @throws {WebAppMissingError} when `root/index.html` does not exist.
 */
export function loadWebApp(root: string): WebApp {
  if (!existsSync(path.join(root, 'index.html'))) throw new WebAppMissingError(root);
  const files = new Map<string, WebFile>();
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const file = path.join(dir, name);
      if (statSync(file).isDirectory()) walk(file);
      else {
        const url = `/${path.relative(root, file).split(path.sep).join('/')}`;
        const type = TYPES[path.extname(name)] ?? 'application/octet-stream';
        files.set(url, { body: readFileSync(file), type, immutable: url.startsWith('/assets/') });
      }
    }
  };
  walk(root);
  files.set('/', files.get('/index.html')!);
  return { root, files };
}

/** The page's own policy: its scripts, styles and requests come from this server only. */
const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/** Answers a GET or HEAD of one of the app's files; false when `pathname` names none. */
export function serveFile(app: WebApp, req: IncomingMessage, res: ServerResponse, pathname: string): boolean {
  const file = app.files.get(pathname);
  if (file === undefined) return false;
  res.writeHead(200, {
    'Content-Type': file.type,
    'Content-Length': file.body.length,
    'Cache-Control': file.immutable ? 'private, max-age=31536000, immutable' : 'no-store',
    ...(file.type.startsWith('text/html') ? { 'Content-Security-Policy': CSP } : {}),
  });
  res.end(req.method === 'HEAD' ? undefined : file.body);
  return true;
}
