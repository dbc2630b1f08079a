import { UsageError } from '../usage-error.js';

/**
 * Where the CLI keeps its saved conversations (docs/cli.md "Saved conversations"):
 * - `sqlite`: `sessions.db` in the data folder (`LOOPCTL_DATA_DIR`, …), the default;
 * - `postgres`: a Postgres database, `url` the connection string handed to `pg` (without the `schema`
 *   parameter), `schema` the schema of loopctl's tables (the URL's `?schema=NAME`, default `loopctl`),
 *   `shown` the URL without its password, for messages.
 */
export type StoreLocation =
  | { readonly kind: 'sqlite' }
  | { readonly kind: 'postgres'; readonly url: string; readonly schema: string; readonly shown: string };

/**
 * The store `--store URL` names, else `LOOPCTL_DATABASE_URL`, else SQLite. A URL is a `postgres://` or
 * `postgresql://` connection string (`postgres://user:password@host:port/database`, as `pg` reads it),
 * with an optional `schema=NAME` parameter (1 to 63 bytes; default `loopctl`).
 * @throws UsageError naming `--store` (or `LOOPCTL_DATABASE_URL`) for anything else.
 */
export function storeLocation(flag: string | undefined, env: NodeJS.ProcessEnv): StoreLocation {
  const fromEnv = env['LOOPCTL_DATABASE_URL'];
  const given = flag ?? (fromEnv === '' ? undefined : fromEnv);
  if (given === undefined) return { kind: 'sqlite' };
  const what = flag !== undefined ? 'option --store' : 'LOOPCTL_DATABASE_URL';
  let url: URL | undefined;
  try {
    url = new URL(given);
  } catch {
    url = undefined;
  }
  if (url === undefined || (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') || url.host === '')
    throw new UsageError(
      `${what} must be a postgres:// URL, e.g. postgres://user@127.0.0.1:5432/db?schema=loopctl ` +
        `(got ${JSON.stringify(shownUrl(given))})`,
    );
  const schema = url.searchParams.get('schema') ?? 'loopctl';
  if (schema === '' || Buffer.byteLength(schema) > 63)
    throw new UsageError(
      `${what}: the schema must be a Postgres name of 1 to 63 bytes (got ${JSON.stringify(schema)})`,
    );
  url.searchParams.delete('schema');
  return { kind: 'postgres', url: url.toString(), schema, shown: shownUrl(url.toString()) };
}

/** `url` without its password (for a message); the text itself when it is not a URL. */
export function shownUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return url.replace(/\/\/([^:/@]*):[^@]*@/, '//$1:***@');
  }
}
