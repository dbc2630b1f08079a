import { concat, defer, ignoreElements, of, tap, type Observable } from 'rxjs';
import { describeValue, readProp } from '../describe.js';
import { RequestShapeError } from '../errors.js';
import { ItemSchema, UserItemSchema, type Item, type UserItem } from '../items.js';
import type { ModelProvider, ModelRequest } from '../model/types.js';
import { callHook$, hookContext } from './hooks.js';
import { toolSpecs } from './request.js';
import type { RunContext } from './run-context.js';
import type { Hooks, PrepareRequestContext, RequestChanges } from './types.js';
import { wireFault } from './wire-check.js';

/** A request after the `prepareRequest` hooks, and the model it goes to. */
export interface ShapedRequest {
  readonly request: ModelRequest;
  readonly model: ModelProvider;
}

const HOOK = 'prepareRequest';
const FIELDS: ReadonlySet<string> = new Set([
  'items',
  'instructions',
  'activeTools',
  'model',
  'providerOptions',
  'record',
]);
const UNREADABLE = Symbol('unreadable');

type PrepareRequest = NonNullable<Hooks['prepareRequest']>;

/**
 * Request shaping (docs/long-runs.md, "Request shaping"): the `prepareRequest` hooks, the agent's then the run's,
 * each a wait at `hook` (checkpoint 11: awaited hook, so a cancel during one lands there and nothing is sent),
 * each seeing the request as the one before shaped it. Their changes are checked (a `RequestShapeError` naming
 * the field fails the run) and applied to this request only; the `user` Items they `record` are then reported
 * (`user_message_injected`) into the run's Items. Emits the shaped request and its model once.
 */
export function shapeRequest$(rc: RunContext<any>, request: ModelRequest): Observable<ShapedRequest> {
  let shaped: ShapedRequest = { request, model: rc.agent.model };
  const recorded: UserItem[] = [];
  const calls = [rc.agent.hooks?.prepareRequest, rc.opts.hooks?.prepareRequest]
    .filter((fn): fn is PrepareRequest => typeof fn === 'function')
    .map((fn) =>
      defer(() => {
        const { request, model } = shaped;
        const ctx = hookContext(rc, { request, model, estimate: rc.meter.estimate(request, model) });
        return callHook$<PrepareRequestContext, unknown>(rc, HOOK, fn, ctx);
      }).pipe(
        tap((changes) => (shaped = applyChanges(rc, shaped, changes, recorded))),
        ignoreElements(),
      ),
    );
  return concat(
    ...calls,
    defer(() => {
      for (const item of recorded) rc.emit({ type: 'user_message_injected', id: item.id, content: item.text });
      return of(shaped);
    }),
  );
}

/** The request with one hook's `changes` applied, or a {@link RequestShapeError} naming what is refused. */
function applyChanges(
  rc: RunContext<any>,
  shaped: ShapedRequest,
  changes: unknown,
  recorded: UserItem[],
): ShapedRequest {
  if (changes === undefined || changes === null) return shaped;
  if (typeof changes !== 'object' || Array.isArray(changes)) {
    refuse('(return value)', `must be an object of changes or nothing (got ${describeValue(changes)})`);
  }
  const c = readChanges(changes as object);
  const next: { -readonly [K in keyof ModelRequest]: ModelRequest[K] } = { ...shaped.request };
  let model = shaped.model;
  if (c.items !== undefined) next.items = checkItems(c.items, 'items', ItemSchema);
  if (c.instructions !== undefined) {
    if (typeof c.instructions !== 'string') refuse('instructions', 'must be a string');
    next.instructions = c.instructions;
  }
  if (c.activeTools !== undefined) next.tools = activeTools(rc, c.activeTools);
  if (c.model !== undefined) {
    const m = c.model as Partial<ModelProvider> | null;
    if (typeof m !== 'object' || m === null || typeof m.id !== 'string' || typeof m.call !== 'function')
      refuse('model', 'must be a ModelProvider (with id and call())');
    model = c.model;
  }
  if (c.providerOptions !== undefined) {
    const o = c.providerOptions as unknown;
    if (typeof o !== 'object' || o === null || Array.isArray(o)) refuse('providerOptions', 'must be an object');
    for (const [family, value] of Object.entries(o as object)) {
      if (typeof value !== 'object' || value === null || Array.isArray(value))
        refuse(`providerOptions.${family}`, 'must be an object of wire fields');
    }
    next.providerOptions = c.providerOptions;
  }
  if (c.record !== undefined) {
    const record = checkItems(c.record, 'record', UserItemSchema) as UserItem[];
    recorded.push(...record);
    next.items = next.items.concat(record);
  }
  const fault = wireFault(next.items);
  if (fault !== undefined) refuse(c.items !== undefined ? `items[${fault.index}]` : 'record', fault.problem);
  return { request: next, model };
}

/** The known fields of `changes`, each read once; an unknown one (a typo like `tools`) is refused. */
function readChanges(changes: object): RequestChanges {
  let keys: string[];
  try {
    keys = Object.keys(changes);
  } catch {
    return refuse('(return value)', 'cannot be read');
  }
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    if (!FIELDS.has(key)) refuse(key, `is not a field of RequestChanges (${[...FIELDS].join(', ')})`);
    const value = readProp(changes, key, UNREADABLE);
    if (value === UNREADABLE) refuse(key, 'cannot be read');
    out[key] = value;
  }
  return out as RequestChanges;
}

function checkItems(value: unknown, field: string, schema: typeof ItemSchema | typeof UserItemSchema): Item[] {
  if (!Array.isArray(value)) return refuse(field, 'must be an array of Items');
  return (value as unknown[]).map((item, i) => {
    const parsed = schema.safeParse(item);
    if (!parsed.success) refuse(`${field}[${i}]`, parsed.error.issues[0]?.message ?? 'not an Item');
    return item as Item;
  });
}

function activeTools(rc: RunContext<any>, names: unknown): ModelRequest['tools'] {
  if (!Array.isArray(names)) return refuse('activeTools', 'must be an array of tool names');
  const specs = toolSpecs(rc.agent);
  return (names as unknown[]).map((name, i) => {
    const spec = specs.find((s) => s.name === name);
    if (spec === undefined) {
      const known = specs.map((s) => s.name).join(', ') || 'none';
      refuse(`activeTools[${i}]`, `${describeValue(name)} is not a tool of the agent (its tools: ${known})`);
    }
    return spec!;
  });
}

function refuse(field: string, problem: string): never {
  throw new RequestShapeError(HOOK, field, problem);
}
