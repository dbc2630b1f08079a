/** `runWorker` of ./command.ts (a type query: nothing is loaded until {@link loadWorker} runs). */
type RunWorker = (typeof import('./command.js'))['runWorker'];

/** The install command of the optional peer `loopctl worker` and `loopctl serve --queue` need. */
export const INSTALL_BULLMQ = 'npm install bullmq@5.81.5';

/**
 * `runWorker`, loaded on demand: `bullmq` is an optional peer dependency, so the rest of the command never
 * loads it. Resolves with a message instead when it is not installed.
 */
export async function loadWorker(): Promise<RunWorker | { missing: string }> {
  try {
    return (await import('./command.js')).runWorker;
  } catch (error) {
    if (!isMissingBullmq(error)) throw error;
    return { missing: `loopctl worker needs bullmq (not installed): ${INSTALL_BULLMQ}` };
  }
}

/** True for the error of importing a module when bullmq (or its ioredis) is not installed. */
export function isMissingBullmq(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : '';
  return code === 'ERR_MODULE_NOT_FOUND' && /'(bullmq|ioredis)'/.test(message);
}
