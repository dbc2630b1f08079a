/** Something a run waits on, since `since` (ms on the renderer's clock). */
export type Wait =
  | { readonly kind: 'model'; readonly since: number; readonly model: string; readonly stream: boolean }
  | { readonly kind: 'silence'; readonly since: number }
  | { readonly kind: 'backoff'; readonly since: number; readonly until: number }
  /** A compaction's summary call (docs/long-runs.md, "Compaction"): shown at once, not after a delay. */
  | { readonly kind: 'compaction'; readonly since: number; readonly items: number };

/** The model deadlines a wait is bounded by, in ms. */
export interface WaitLimits {
  readonly firstEventMs?: number;
  readonly idleMs?: number;
  readonly requestMs?: number;
}

/**
 * The status line's text for `wait` at `now`: what it waits for, its
 * elapsed whole seconds, and the deadline that ends it ("gives up at 60 s");
 * a backoff counts down instead.
 */
export function waitText(wait: Wait, now: number, limits: WaitLimits): string {
  const elapsed = `${Math.floor((now - wait.since) / 1000)} s`;
  const limit = (ms: number | undefined) => (ms === undefined ? '' : ` (gives up at ${ms / 1000} s)`);
  switch (wait.kind) {
    case 'model':
      return wait.stream
        ? `waiting for ${wait.model} to start answering · ${elapsed}${limit(limits.firstEventMs)}`
        : `waiting for ${wait.model}'s whole answer (not streamed) · ${elapsed}${limit(limits.requestMs)}`;
    case 'silence':
      return `stream silent · ${elapsed}${limit(limits.idleMs)}`;
    case 'backoff':
      return `retrying in ${Math.max(0, Math.ceil((wait.until - now) / 1000))} s`;
    case 'compaction':
      return `compacting… summarising ${wait.items} earlier messages · ${elapsed}`;
  }
}
