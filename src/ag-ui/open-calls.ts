/**
 * The tool calls an AG-UI stream holds open: each got a `TOOL_CALL_START` or a `loopctl.approval_requested`
 * and no `TOOL_CALL_RESULT` yet. A terminal settles every one of them (docs/ui.md, "A terminal settles
 * everything"). Isomorphic.
 */

/** A call the client holds open. `path`: for a sub-agent's call, the tool names from the root down to it. */
export interface OpenCall {
  /** The run the call belongs to: the root run, or (nested) the sub-run whose event it came in. */
  readonly runId: string;
  readonly callId: string;
  readonly name: string;
  /** The raw JSON text of its arguments (what `TOOL_CALL_ARGS` carries). */
  readonly arguments: string;
  readonly path?: readonly string[];
  /** True once its `TOOL_CALL_START` was sent; false while it only waits for approval. */
  started: boolean;
}

/** The open calls of one stream, keyed by run and call id (a sub-agent's call id may repeat one of the root's). */
export class OpenCalls {
  readonly #calls = new Map<string, OpenCall>();

  /** The open call `callId` of run `runId`, if any. */
  get(runId: string, callId: string): OpenCall | undefined {
    return this.#calls.get(key(runId, callId));
  }

  /** Opens (or returns the open) call; `started` says whether its `TOOL_CALL_START` is sent now. */
  open(call: Omit<OpenCall, 'started'>, started: boolean): OpenCall {
    const k = key(call.runId, call.callId);
    const known = this.#calls.get(k);
    if (known) {
      known.started ||= started;
      return known;
    }
    const opened: OpenCall = { ...call, started };
    this.#calls.set(k, opened);
    return opened;
  }

  /** Closes the call (its result is sent); the call, or undefined when it was not open. */
  close(runId: string, callId: string): OpenCall | undefined {
    const k = key(runId, callId);
    const call = this.#calls.get(k);
    this.#calls.delete(k);
    return call;
  }

  /** Closes and returns every open call of run `runId` (a sub-run that ended), in the order they opened. */
  closeRun(runId: string): OpenCall[] {
    const out = [...this.#calls.values()].filter((c) => c.runId === runId);
    for (const c of out) this.#calls.delete(key(c.runId, c.callId));
    return out;
  }

  /** Closes and returns every open call, in the order they opened. */
  closeAll(): OpenCall[] {
    const out = [...this.#calls.values()];
    this.#calls.clear();
    return out;
  }
}

const key = (runId: string, callId: string): string => `${runId}\u0000${callId}`;
