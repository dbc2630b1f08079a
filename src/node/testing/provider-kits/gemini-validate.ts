/**
 * What Gemini's `generateContent` / `streamGenerateContent` refuse with a 400 INVALID_ARGUMENT: the
 * `geminiWire` validator, and the rules any Gemini-shaped test server can share (`geminiContentsFault`).
 */
import { geminiPartFault } from '../../../model/gemini/parts.js';
import { isRecord } from './openai-wire.js';

type Part = Record<string, unknown>;
type Turn = { readonly role: string; readonly parts: readonly Part[] };
type Call = { readonly name?: unknown; readonly id?: unknown; readonly args?: unknown };

const callsOf = (turn: Turn): Call[] =>
  turn.parts.flatMap((p) => (isRecord(p['functionCall']) ? [p['functionCall'] as Call] : []));
const responsesOf = (turn: Turn): Call[] =>
  turn.parts.flatMap((p) => (isRecord(p['functionResponse']) ? [p['functionResponse'] as Call] : []));

/**
 * Why Gemini would refuse the `contents` (and `systemInstruction`) of `body`, in the API's words where it has them,
 * or undefined: no `contents`; a role other than `user` or `model`; a turn without parts; a part out of shape
 * (`geminiPartFault`: not exactly one data field, `text` not a string…); a `systemInstruction`
 * without parts; a `functionCall` outside a model turn, without a name, or whose `args` is not an object; a call id
 * used twice; a model turn with calls not followed at once by a user turn with as many `functionResponse` parts (the
 * same names, and each call's `id` where it has one); a `functionResponse` turn that follows no call turn.
 * Thought signatures are not checked here (they need to know what was issued: {@link geminiRequestFault}).
 */
export function geminiContentsFault(body: unknown): string | undefined {
  if (!isRecord(body)) return 'the body must be a JSON object';
  const contents = body['contents'];
  if (!Array.isArray(contents) || contents.length === 0) return 'contents is not specified';
  const system = body['systemInstruction'];
  if (system !== undefined && !(isRecord(system) && Array.isArray(system['parts']))) {
    return 'systemInstruction.parts must be a list of parts';
  }
  for (const [i, content] of contents.entries()) {
    if (!isRecord(content) || (content['role'] !== 'user' && content['role'] !== 'model')) {
      return `contents[${i}].role: Please use a valid role: user, model.`;
    }
    const parts = content['parts'];
    if (!Array.isArray(parts) || parts.length === 0 || !parts.every(isRecord)) {
      return `contents[${i}].parts: contents.parts must not be empty.`;
    }
    for (const [k, part] of parts.entries()) {
      const fault = geminiPartFault(part);
      if (fault) return `contents[${i}].parts[${k}]: ${fault}`;
    }
  }
  const turns = contents as Turn[];
  const ids = new Set<string>();
  for (const [i, turn] of turns.entries()) {
    const calls = callsOf(turn);
    if (responsesOf(turn).length > 0) {
      const before = turns[i - 1];
      if (turn.role !== 'user' || before?.role !== 'model' || callsOf(before).length === 0) {
        const rule = 'Please ensure that function response turn comes immediately after a function call turn.';
        return `contents[${i}]: ${rule}`;
      }
    }
    if (calls.length === 0) continue;
    if (turn.role !== 'model') return `contents[${i}]: a functionCall part must be in a model turn`;
    for (const [k, call] of calls.entries()) {
      const where = `contents[${i}].parts functionCall ${k}`;
      if (typeof call.name !== 'string' || call.name === '') return `${where}: name is required`;
      if (call.args !== undefined && !isRecord(call.args)) return `${where}: args must be a JSON object`;
      if (typeof call.id === 'string') {
        if (ids.has(call.id)) return `${where}: duplicate function call id ${call.id}`;
        ids.add(call.id);
      }
    }
    const next = turns[i + 1];
    const answered = next?.role === 'user' ? responsesOf(next) : [];
    if (answered.length !== calls.length) {
      return (
        `contents[${i + 1}]: Please ensure that the number of function response parts is equal to the number of ` +
        'function call parts of the function call turn.'
      );
    }
    const names = (list: Call[]) =>
      list
        .map((c) => String(c.name))
        .sort()
        .join(',');
    if (names(calls) !== names(answered)) {
      return `contents[${i + 1}]: the function responses name ${names(answered)}, the calls ${names(calls)}`;
    }
    for (const call of calls) {
      if (typeof call.id === 'string' && !answered.some((r) => r.id === call.id)) {
        return `contents[${i + 1}]: no functionResponse has the id ${call.id} of its function call`;
      }
    }
  }
  return undefined;
}

/**
 * The thought signature `geminiWire` puts on the first `functionCall` of an answer: derived from that call's id and
 * the answer's thought text, so a validator without state can tell a signature dropped, changed, or sent with its
 * thoughts changed. Base64 of `kit-signature:<id>:<thought text>`.
 */
export function kitSignature(callId: string, thoughts: string): string {
  return Buffer.from(`kit-signature:${callId}:${thoughts}`, 'utf8').toString('base64');
}

/**
 * Why Gemini would refuse `body` as `geminiWire` serves it, or undefined: {@link geminiContentsFault}, and in each
 * model turn with calls, the first call without the signature it was issued with (`kitSignature` of its id and the
 * turn's thought text): a signature dropped, changed, or moved, or the thoughts before it changed or dropped.
 */
export function geminiRequestFault(body: unknown): string | undefined {
  const fault = geminiContentsFault(body);
  if (fault) return fault;
  for (const [i, turn] of ((body as { contents: Turn[] }).contents ?? []).entries()) {
    const first = turn.parts.find((p) => isRecord(p['functionCall']));
    if (turn.role !== 'model' || !first) continue;
    const id = (first['functionCall'] as Call).id;
    const thoughts = turn.parts
      .filter((p) => p['thought'] === true && typeof p['text'] === 'string')
      .map((p) => p['text'] as string)
      .join('');
    if (typeof id === 'string' && first['thoughtSignature'] !== kitSignature(id, thoughts)) {
      return `contents[${i}]: Function call is missing a thought_signature in functionCall parts.`;
    }
  }
  return undefined;
}

/** Variants of a valid tool-loop body that Gemini refuses, one per rule of {@link geminiRequestFault}. */
export function geminiInvalidVariants(body: unknown): { fault: string; body: unknown }[] {
  const copy = () => structuredClone(body) as { contents: { role: string; parts: Part[] }[] };
  const lastCallTurn = (b: ReturnType<typeof copy>) => {
    let at = -1;
    b.contents.forEach((c, i) => {
      if (c.role === 'model' && c.parts.some((p) => isRecord(p['functionCall']))) at = i;
    });
    return at;
  };
  const variants: { fault: string; body: unknown }[] = [];
  const edit = (fault: string, change: (b: ReturnType<typeof copy>) => void) => {
    const b = copy();
    change(b);
    variants.push({ fault, body: b });
  };
  edit('a function call without its response turn', (b) => void b.contents.splice(lastCallTurn(b) + 1, 1));
  edit('a function response turn after no call', (b) => void b.contents.splice(lastCallTurn(b), 1));
  edit('a role other than user or model', (b) => void (b.contents[0]!.role = 'assistant'));
  edit('no contents', (b) => void (b.contents = []));
  edit('a changed thought signature', (b) => {
    const part = b.contents[firstSigned(b)]!.parts.find((p) => typeof p['thoughtSignature'] === 'string')!;
    part['thoughtSignature'] = `${String(part['thoughtSignature'])}x`;
  });
  edit('a dropped thought signature', (b) => {
    for (const p of b.contents[firstSigned(b)]!.parts) delete p['thoughtSignature'];
  });
  edit('changed thoughts before a signed call', (b) => {
    const part = b.contents[firstSigned(b)]!.parts.find((p) => p['thought'] === true);
    if (part) part['text'] = 'edited';
    else b.contents[firstSigned(b)]!.parts.unshift({ text: 'added', thought: true });
  });
  edit('a part without data', (b) => void b.contents[0]!.parts.push({ thought: true }));
  edit('arguments that are not a JSON object', (b) => {
    const call = b.contents[lastCallTurn(b)]!.parts.find((p) => isRecord(p['functionCall']))!;
    (call['functionCall'] as Record<string, unknown>)['args'] = '{"city":"Paris"}';
  });
  return variants;
}

const firstSigned = (b: { contents: { role: string; parts: Part[] }[] }) =>
  b.contents.findIndex((c) => c.role === 'model' && c.parts.some((p) => typeof p['thoughtSignature'] === 'string'));
