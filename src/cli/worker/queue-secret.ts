/** The environment variable `loopctl serve --queue` and `loopctl worker --queue` read their queue secret from. */
export const QUEUE_SECRET_ENV = 'LOOPCTL_QUEUE_SECRET';

/** The one command that sets a queue secret in a shell (the same value goes to serve and every worker). */
export const SET_QUEUE_SECRET = `export ${QUEUE_SECRET_ENV}=$(openssl rand -hex 32)`;

/** The least length in bytes of the secret (loopctl/bullmq's `MIN_QUEUE_SECRET_BYTES`). */
const MIN_BYTES = 32;

/**
 * The queue secret of `env` (docs/scale-out.md, "Trust boundary"), or the line `command` exits 2 with when it
 * is missing or shorter than 32 bytes: it says why and shows {@link SET_QUEUE_SECRET}. The value is never
 * printed.
 */
export function queueSecret(env: NodeJS.ProcessEnv, command: string): { secret: string } | { line: string } {
  const secret = env[QUEUE_SECRET_ENV] ?? '';
  const bytes = Buffer.byteLength(secret, 'utf8');
  if (bytes >= MIN_BYTES) return { secret };
  const why = secret === '' ? 'is not set' : `is ${bytes} bytes; it needs at least ${MIN_BYTES}`;
  return {
    line:
      `loopctl: ${command} signs its runs with a secret shared by serve and every worker, and ${QUEUE_SECRET_ENV} ` +
      `${why}. Set one in each shell that runs them: ${SET_QUEUE_SECRET}`,
  };
}
