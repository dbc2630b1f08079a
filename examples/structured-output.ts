/**
 * Structured output: the agent's final answer must match a zod schema. The first answer is refused
 * (a string where a number belongs), so the model gets a repair turn with the validation error; the
 * second answer streams, each `output_delta` carrying the answer so far as a partial value, and the
 * result's `value` is typed by the schema.
 *
 *   npx tsx examples/structured-output.ts
 */
import { z } from 'zod';
import { defineAgent, start } from 'loopctl';
import { scriptedModel } from 'loopctl/testing';

const Forecast = z.object({ city: z.string(), highC: z.number(), summary: z.string() });

const model = scriptedModel([
  '{"city": "Oslo", "highC": "nine", "summary": "Grey"}',
  { text: ['{"city": "Oslo", ', '"highC": 9, "summ', 'ary": "Grey, light rain"}'] },
]);
const agent = defineAgent({
  name: 'forecaster',
  instructions: "You give tomorrow's forecast.",
  model,
  output: Forecast,
  outputRetries: 1,
});

const handle = start(agent, 'Forecast for Oslo?');
handle.events$.subscribe((event) => {
  if (event.type === 'turn_started') console.log(`turn ${event.turn}`);
  if (event.type === 'output_delta' && event.turn === 2) console.log(`partial: ${JSON.stringify(event.value)}`);
});

const result = await handle.result;
const repair = model.requests[1]!.items.at(-1)!;
console.log(`repair turn: ${repair.type === 'user' ? repair.text.split('\n')[0] : ''}`);
const forecast = result.value!; // { city: string; highC: number; summary: string }
console.log(`${forecast.city}: ${forecast.highC} °C, ${forecast.summary}`);
