/** One way to run a fast-check property in these specs, with the command that replays a failure. */
import fc from 'fast-check';

/**
 * Checks `property` on `numRuns` random inputs (`FC_SEED` and `FC_PATH` replay a failure), and throws an error
 * naming the command that replays it (`FC_SEED=… FC_PATH=… npx vitest run <specFile>`), the counterexample and
 * the error it raised.
 */
export function checkProperty<T>(property: fc.IProperty<T>, numRuns: number, specFile: string): void {
  const seed = process.env.FC_SEED ? Number(process.env.FC_SEED) : undefined;
  const details = fc.check(property, {
    numRuns,
    ...(seed !== undefined ? { seed } : {}),
    ...(process.env.FC_PATH ? { path: process.env.FC_PATH } : {}),
  });
  if (!details.failed) return;
  const replay = [`FC_SEED=${details.seed}`, `FC_PATH=${details.counterexamplePath}`, `npx vitest run ${specFile}`];
  throw new Error(
    [
      'property failed; replay with:',
      `  ${replay.join(' ')}`,
      `counterexample: ${fc.stringify(details.counterexample)}`,
      String(details.errorInstance),
    ].join('\n'),
  );
}
