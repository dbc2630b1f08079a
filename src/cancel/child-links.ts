/** Where a finalized child's entry lives: its parent's set, and the entry itself. */
interface Entry {
  readonly refs: Set<WeakRef<object>>;
  readonly ref: WeakRef<object>;
}

// The held value names the set, never the parent: a registry entry must not keep a parent
// (and the children it pins) alive.
const registry = new FinalizationRegistry<Entry>(({ refs, ref }) => {
  refs.delete(ref);
});

/**
 * The children of one CancelSignal ("a dropped child is freed"). Each child is held
 * through a WeakRef, in creation order; a finalized child's entry is removed by a
 * FinalizationRegistry, and `live()` sweeps any that are left. A child something
 * listens to is *pinned*: held strongly as well, so a listener is never lost to GC.
 * @internal Used by CancelSignal only.
 */
export class ChildLinks<T extends object> {
  readonly #refs = new Set<WeakRef<T>>();
  #pinned: Set<T> | null = null;

  /** Entries held, finalized ones not yet removed included (0 once every child is gone). */
  get size(): number {
    return this.#refs.size;
  }

  /** Children held strongly because something listens to them. */
  get pinnedCount(): number {
    return this.#pinned === null ? 0 : this.#pinned.size;
  }

  /** Adds `child` (weakly); returns its entry, which the child keeps to detach itself. */
  add(child: T): WeakRef<T> {
    const ref = new WeakRef(child);
    this.#refs.add(ref);
    registry.register(child, { refs: this.#refs as Set<WeakRef<object>>, ref }, ref);
    return ref;
  }

  /** Detaches `child` at once (its `dispose()`): no GC needed. */
  remove(child: T, ref: WeakRef<T>): void {
    this.#refs.delete(ref);
    registry.unregister(ref);
    this.#pinned?.delete(child);
  }

  /** Holds `child` strongly (`true`) or only weakly again (`false`). */
  setPinned(child: T, pinned: boolean): void {
    if (pinned) (this.#pinned ??= new Set()).add(child);
    else this.#pinned?.delete(child);
  }

  /** The children still alive, in creation order (a snapshot); drops entries of finalized ones. */
  live(): T[] {
    const out: T[] = [];
    if (this.#refs.size === 0) return out;
    for (const ref of this.#refs) {
      const child = ref.deref();
      if (child === undefined) this.#refs.delete(ref);
      else out.push(child);
    }
    return out;
  }
}
