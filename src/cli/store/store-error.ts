/**
 * The saved conversations could not be used (a corrupt file, one from a
 * later loopctl, a folder that cannot be created): the command prints the
 * message as one `loopctl: …` line and exits 1. Nothing was deleted.
 * Its own file so the store openers (`open-store.ts`, `postgres.ts`) share it without an import cycle.
 */
export class StoreError extends Error {
  override readonly name = 'StoreError';
}
