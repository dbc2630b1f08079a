/**
 * Turn overhead (issue 11, bench 3): what the engine costs per turn when the
 * model and the tools cost nothing. Each turn: the model (answering
 * synchronously) calls one instant synchronous tool; the last turn answers
 * with text. Wall time (the whole run is microtasks: wall ≈ CPU) per turn,
 * p50 over many runs, all in this process. Variants:
 *  - `scriptedModel` + zod tool: what the brief names (the test model also
 *    scans the whole history for unpaired calls on every request: O(history));
 *  - `instantToolModel` + zod tool: a stateless O(1) model, so only the engine is measured;
 *  - `instantToolModel` + JSON-Schema tool: without zod (no `z.toJSONSchema`, no `safeParse`);
 *  - run lengths 10 / 100 / 1 000 turns: how the per-turn cost grows with the history.
 */
import { lastValueFrom } from 'rxjs';
import { z } from 'zod';
import type { ModelProvider, Tool } from '../src/index.js';
// Internal (not exported by loopctl): measured from the sources.
import { toJsonSchema } from '../src/tools/tool.js';
import { LIB_LABEL, lib, testing } from './lib/loopctl.js';
import { instantToolModel } from './lib/models.js';
import { fmt, median, printTable, quantile } from './lib/stats.js';

const { defineAgent, run, tool } = lib;
const { scriptedModel } = testing;

const zodTool = tool({ name: 'noop', description: 'does nothing', parameters: z.object({}), execute: () => 'ok' });
const jsonTool = tool({ name: 'noop', description: 'does nothing', parameters: { type: 'object', properties: {} }, execute: () => 'ok' });

async function oneRun(model: ModelProvider, tools: Tool[], turns: number): Promise<number> {
  const agent = defineAgent({ name: 'bench', instructions: 'be quick', model, tools, maxTurns: turns + 1 });
  const t0 = performance.now();
  const last = await lastValueFrom(run(agent, 'go'));
  const ms = performance.now() - t0;
  if (last.type !== 'run_completed') throw new Error(`expected run_completed, got ${last.type}`);
  return ms;
}

const scriptedSteps = (turns: number) => [...Array.from({ length: turns - 1 }, () => ({ toolCalls: [{ name: 'noop', arguments: {} }] })), 'done'];

interface Variant {
  readonly name: string;
  readonly turns: number;
  readonly model: () => ModelProvider;
  readonly tools: Tool[];
}

export async function main(): Promise<void> {
  const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 15);
  const TURNS_PER_SAMPLE = 1000;
  const variants: Variant[] = [
    { name: 'scriptedModel + zod tool', turns: 1000, model: () => scriptedModel(scriptedSteps(1000)), tools: [zodTool] },
    { name: 'instant model + zod tool', turns: 1000, model: () => instantToolModel(1000), tools: [zodTool] },
    { name: 'instant model + JSON-Schema tool', turns: 1000, model: () => instantToolModel(1000), tools: [jsonTool] },
    { name: 'instant model + zod tool', turns: 100, model: () => instantToolModel(100), tools: [zodTool] },
    { name: 'instant model + zod tool', turns: 10, model: () => instantToolModel(10), tools: [zodTool] },
    { name: 'instant model + JSON-Schema tool', turns: 10, model: () => instantToolModel(10), tools: [jsonTool] },
    { name: 'instant model, text answer only (no tool)', turns: 1, model: () => instantToolModel(1), tools: [jsonTool] },
  ];
  // Round-robin: each round takes one sample of every variant (≈ 1 000 turns each), so noise hits all alike.
  const samples = variants.map(() => [] as number[]);
  for (let round = 0; round < 2 + ROUNDS; round++) {
    for (const [i, v] of variants.entries()) {
      let ms = 0;
      const runs = Math.max(1, Math.round(TURNS_PER_SAMPLE / v.turns));
      for (let r = 0; r < runs; r++) ms += await oneRun(v.model(), v.tools, v.turns);
      if (round >= 2) samples[i]!.push((ms * 1000) / (runs * v.turns));
    }
  }
  const rows: string[][] = [['variant', 'turns/run', 'samples', 'µs/turn p50', 'p90', 'min']];
  for (const [i, v] of variants.entries()) {
    const xs = samples[i]!;
    rows.push([v.name, String(v.turns), String(xs.length), fmt(median(xs), 1), fmt(quantile(xs, 0.9), 1), fmt(Math.min(...xs), 1)]);
  }
  printTable(`turn overhead: instant model, one instant synchronous tool per turn; µs per turn (a 1-turn run: µs per run); ${ROUNDS} rounds of ≈ ${TURNS_PER_SAMPLE} turns per variant, round-robin (target < 50 µs/turn) — ${LIB_LABEL}`, rows);

  // Pieces of a turn, measured alone (µs per call, p50 of 20 batches of 2 000).
  const piece = (f: () => unknown): number => {
    const xs: number[] = [];
    for (let b = 0; b < 25; b++) {
      const t0 = performance.now();
      for (let i = 0; i < 2000; i++) f();
      if (b >= 5) xs.push(((performance.now() - t0) * 1000) / 2000);
    }
    return median(xs);
  };
  const schema = z.object({});
  const draft = { type: 'text_delta', delta: 'abc' } as const;
  let seq = 0;
  const pieces: string[][] = [['piece (run alone)', 'µs/call p50'],
    ['toJsonSchema(z.object({})) (buildRequest, per tool per turn)', fmt(piece(() => toJsonSchema(schema)), 2)],
    ['schema.safeParse({}) (parseArguments, per call)', fmt(piece(() => schema.safeParse({})), 2)],
    ['{ ...draft, runId, seq, turn, at } (RunController.emit, per event)', fmt(piece(() => ({ ...draft, runId: 'r', seq: seq++, turn: 1, at: Date.now() })), 2)],
    ['Object.assign({ type, runId, seq, turn, at }, draft) (proposed emit)', fmt(piece(() => Object.assign({ type: draft.type, runId: 'r', seq: seq++, turn: 1, at: Date.now() }, draft)), 2)],
  ];
  printTable('pieces of a turn (V8 in Node 20: a spread FIRST in an object literal followed by more properties is a slow path)', pieces);
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
