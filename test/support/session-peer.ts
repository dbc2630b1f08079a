/**
 * The second process of the session contract's cross-process parts: `node session-peer.ts KIND WHERE` (bundled first:
 * test/support/bundle-script.ts)
 * opens the store (`sqlite FILE` or `postgres SCHEMA`, with the libpq variables) and serves the parent's requests.
 */
import pg from 'pg';
import { servePeer } from '../../src/node/testing/peer.js';
import { PostgresSessionStore } from '../../src/postgres/store.js';
import { SqliteSessionStore } from '../../src/sqlite/store.js';

const [kind, where] = process.argv.slice(2);
void servePeer(() => {
  if (kind === 'sqlite') return new SqliteSessionStore(where!);
  if (kind === 'postgres') return new PostgresSessionStore(new pg.Pool({ max: 2 }), { schema: where! });
  throw new Error(`session-peer: unknown store kind ${String(kind)}`);
});
