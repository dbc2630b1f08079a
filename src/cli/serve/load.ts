/** `runServe` of ./command.ts (a type query: nothing is loaded until {@link loadServe} runs). */
type RunServe = (typeof import('./command.js'))['runServe'];

/** What `loopctl serve` needs that the package does not install: the optional peers of loopctl/http. */
export const SERVE_PEERS = ['@ag-ui/core', '@ag-ui/encoder'] as const;

/** The install command that brings {@link SERVE_PEERS} at the versions the package was built with. */
export const INSTALL_PEERS = 'npm install @ag-ui/core@1.0.0 @ag-ui/encoder@1.0.0';

/**
 * `runServe`, loaded on demand: loopctl serve uses loopctl/http, whose AG-UI packages are optional peer
 * dependencies, so the rest of the command never loads them. Resolves with a message instead when they are
 * not installed.
 */
export async function loadServe(): Promise<RunServe | { missing: string }> {
  try {
    return (await import('./command.js')).runServe;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const message = error instanceof Error ? error.message : '';
    const peer = SERVE_PEERS.find((p) => message.includes(`'${p}'`) || message.includes(`"${p}"`));
    if (code !== 'ERR_MODULE_NOT_FOUND' || peer === undefined) throw error;
    return { missing: `loopctl serve needs ${SERVE_PEERS.join(' and ')} (${peer} is not installed): ${INSTALL_PEERS}` };
  }
}
