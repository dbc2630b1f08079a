/**
 * Turn overhead (issue 11, bench 3; issue 17 target < 40 µs): what the engine costs per turn when
 * the model and the tools cost nothing. Each turn: the model (answering synchronously) calls one
 * instant synchronous tool; the last turn answers with text. Wall time (the whole run is
 * microtasks: wall ≈ CPU) per turn, all in this process. Variants:
 *  - `instantToolModel` + zod tool / + JSON-Schema tool: a stateless O(1) model, so only the
 *    engine is measured; run lengths 10 / 100 / 1 000 turns show how the cost grows with the history;
 *  - a 1-turn run that answers with text (µs per run);
 *  - `scriptedModel` + zod tool: the test model, which also scans the whole history for unpaired
 *    calls on every request (O(history)): not the engine's cost;
 *  - with BENCH_BASELINE_DIR, the instant-model variants again on the baseline build.
 * BENCH_ROUNDS rounds (default 15, after 2 warm-up rounds), round-robin: each round takes one
 * sample of ≈ 1 000 turns of every variant, so noise hits all alike. Figures: median of the
 * rounds (min–max).
 */
import { lastValueFrom } from 'rxjs';
import { z } from 'zod';
import type { ModelProvider, Tool } from '../src/index.js';
import { builds, LIB_LABEL, type Build } from './lib/loopctl.js';
import { instantToolModel } from './lib/models.js';
import { fmt, loadAverage, median, medianRange, printTable } from './lib/stats.js';

/** The target (issue 17): < 40 µs per turn, instant model and one instant tool. */
const TARGET_US = 40;

async function oneRun(build: Build, model: ModelProvider, tools: Tool[], turns: number): Promise<number> {
  const agent = build.lib.defineAgent({ name: 'bench', instructions: 'be quick', model, tools, maxTurns: turns + 1 });
  const t0 = performance.now();
  const last = await lastValueFrom(build.lib.run(agent, 'go'));
  const ms = performance.now() - t0;
  if (last.type !== 'run_completed') throw new Error(`expected run_completed, got ${last.type}`);
  return ms;
}

const scriptedSteps = (turns: number) => [
  ...Array.from({ length: turns - 1 }, () => ({ toolCalls: [{ name: 'noop', arguments: {} }] })),
  'done',
];

interface Variant {
  readonly name: string;
  readonly build: Build;
  readonly turns: number;
  readonly model: () => ModelProvider;
  readonly tools: Tool[];
  /** Counted against the target: an instant model calling one instant tool per turn. */
  readonly target: boolean;
}

function variantsOf(build: Build): Variant[] {
  const { tool } = build.lib;
  const zodTool = tool({ name: 'noop', description: 'does nothing', parameters: z.object({}), execute: () => 'ok' });
  const jsonTool = tool({
    name: 'noop',
    description: 'does nothing',
    parameters: { type: 'object', properties: {} },
    execute: () => 'ok',
  });
  const v = (name: string, turns: number, model: () => ModelProvider, tools: Tool[], target: boolean): Variant => ({
    name,
    build,
    turns,
    model,
    tools,
    target,
  });
  return [
    v('instant model + zod tool', 10, () => instantToolModel(10), [zodTool], true),
    v('instant model + zod tool', 100, () => instantToolModel(100), [zodTool], true),
    v('instant model + zod tool', 1000, () => instantToolModel(1000), [zodTool], true),
    v('instant model + JSON-Schema tool', 10, () => instantToolModel(10), [jsonTool], true),
    v('instant model + JSON-Schema tool', 1000, () => instantToolModel(1000), [jsonTool], true),
    v('instant model, text answer only (no tool)', 1, () => instantToolModel(1), [jsonTool], false),
    ...(build === builds[0]
      ? [v('scriptedModel + zod tool', 1000, () => build.testing.scriptedModel(scriptedSteps(1000)), [zodTool], false)]
      : []),
  ];
}

export async function main(): Promise<void> {
  const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 15);
  const WARMUP = 2;
  const TURNS_PER_SAMPLE = 1000;
  const variants = builds.flatMap(variantsOf);
  const samples = variants.map(() => [] as number[]);
  const loads: string[] = [];
  for (let round = 0; round < WARMUP + ROUNDS; round++) {
    if (round >= WARMUP && (round - WARMUP) % 5 === 0) loads.push(await loadAverage());
    // Rotate the order each round, so no variant always runs after the same one.
    for (let k = 0; k < variants.length; k++) {
      const i = (k + round) % variants.length;
      const v = variants[i]!;
      let ms = 0;
      const runs = Math.max(1, Math.round(TURNS_PER_SAMPLE / v.turns));
      for (let r = 0; r < runs; r++) ms += await oneRun(v.build, v.model(), v.tools, v.turns);
      if (round >= WARMUP) samples[i]!.push((ms * 1000) / (runs * v.turns));
    }
  }
  const rows: string[][] = [
    ['variant', 'build', 'turns/run', 'rounds', 'µs/turn: median (min–max)', `< ${TARGET_US} µs`],
  ];
  for (const [i, v] of variants.entries()) {
    const xs = samples[i]!;
    const verdict = !v.target || v.build !== builds[0] ? '' : median(xs) < TARGET_US ? 'yes' : 'NO';
    rows.push([v.name, v.build.name, String(v.turns), String(xs.length), medianRange(xs, 1), verdict]);
  }
  printTable(
    `turn overhead: instant model, one instant synchronous tool per turn; µs per turn ` +
      `(a 1-turn run: µs per run); ${ROUNDS} rounds of ≈ ${TURNS_PER_SAMPLE} turns per variant, round-robin ` +
      `(target < ${TARGET_US} µs/turn) — ${LIB_LABEL}; load average: ${loads.join(' | ')}`,
    rows,
  );
  console.log(`(${fmt(ROUNDS, 0)} rounds)`);
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
