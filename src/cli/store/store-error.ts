/**
 * The saved conversations could not be used (a corrupt file, one from a
 * later loopctl, a folder that cannot be created, a Postgres server that does not answer): the command prints
 * the message as one `loopctl: …` line and exits 1. Nothing was deleted.
 */
export class StoreError extends Error {
  override readonly name = 'StoreError';
}
