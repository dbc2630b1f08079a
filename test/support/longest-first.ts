/**
 * The order in which `npm test` hands spec files to its workers: the known-long files first, so that on two cores
 * the workers finish together instead of one long file, started last, running on alone (in a run of commit 7d71248
 * the 20 000-thread soak spec was queued 154 s in and ran 115 s, most of it alone).
 *
 * vitest's own order (`BaseSequencer`) puts the projects in name order, then, inside a project, the files by their
 * duration in vitest's results cache, or by size when the cache has no figure. A fresh clone (CI) has no cache, and
 * a file's size says little of its duration: the soak spec is short text and a long run. So the files of
 * {@link KNOWN_LONG} come first, longest first, whatever their project; the rest keep vitest's order.
 *
 * Why the rest stays grouped by project: a shared worker (`isolate: false`) is kept for the next file only when the
 * next file in the queue belongs to the same project; otherwise it exits and the next file of its project starts a
 * new worker, which imports vitest, the setup file and the sources again. The known-long files are few and are
 * handed out first, so they cost a handful of such restarts at most.
 */
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The slowest hermetic spec files (paths from the repository root) and their CPU time in seconds, run alone on the
 * 2-core machine (user + system time of `npx vitest run <file>`, vitest's own start-up included, at load average
 * 8-14; the CLI specs and examples again at load average 3-4 with the bundled bin, `dist/bin/loopctl.js`, whose
 * starts cost half the CPU of the unbundled CLI's). Only the order matters, and only roughly: a file that is not
 * listed counts as 0 and runs after these. Refresh the list when a spec grows long (the JSON report's per-file
 * durations show it: `VITEST_JSON_REPORT=report.json npm test`).
 */
export const KNOWN_LONG: Readonly<Record<string, number>> = {
  'test/runs-soak-threads.test.ts': 29, // 20 000 HTTP runs in the worker itself
  'test/properties.test.ts': 17, // 2 000 random runs in the worker itself
  'test/cli-openai.test.ts': 17,
  'test/cli-compaction.test.ts': 15,
  'test/cli-anthropic.test.ts': 14,
  'test/cli-offline.test.ts': 14,
  'test/session-contract-sqlite.test.ts': 14,
  'test/examples.test.ts': 12,
  'test/cli-gemini.test.ts': 12,
  'test/start-replay-memory.test.ts': 11,
  'test/cli-otel.test.ts': 9,
  'test/http-resume.test.ts': 9,
  'test/cli-interactive.test.ts': 7,
  'test/cli-offline-no-self-overwrite.test.ts': 7,
  // Light on CPU, long in real time (the contract suites' 1 s retry-after and 500 ms deadlines on real sockets):
  // started early, their waits overlap the CPU work of the others instead of ending the run.
  'test/provider-contract-openai.test.ts': 5,
  'test/provider-contract-anthropic.test.ts': 5,
  'test/provider-contract-gemini.test.ts': 5,
};

/** The {@link KNOWN_LONG} files first, longest first; then vitest's order (by project, then cache or size). */
export class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const root = this.ctx.config.root;
    const weight = (spec: TestSpecification) =>
      KNOWN_LONG[path.relative(root, spec.moduleId).split(path.sep).join('/')] ?? 0;
    const group = (spec: TestSpecification) => spec.project.config.sequence.groupOrder;
    // Groups (`sequence.groupOrder`, the services tier's) run one after the other, so they stay first; inside one,
    // Array.prototype.sort is stable: files of equal weight (all the unlisted ones) keep vitest's order.
    return [...sorted].sort((a, b) => group(a) - group(b) || weight(b) - weight(a));
  }
}
