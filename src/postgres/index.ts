/**
 * The `loopctl/postgres` entry (Node.js only): durable sessions in a Postgres schema, on a `pg` Pool
 * the caller passes in (`pg` is an optional peer dependency). Tables are created and upgraded only by
 * the explicit `createSchema` and `migrate`. See docs/sessions.md.
 */
export { PostgresSessionStore, type PostgresSessionStoreOptions } from './store.js';
export { PostgresSession } from './session.js';
export { createSchema, migrate, POSTGRES_SCHEMA_VERSION, type PostgresSchemaOptions } from './schema.js';
