import { Subject, type Observable } from 'rxjs';

/**
 * The handle for one pushed steering message: a frozen plain object whose
 * identity is the handle. `id` becomes the injected `user` Item's id and the
 * `id` of the `user_message_injected` event.
 */
export interface MailboxToken {
  readonly id: string;
  readonly content: string;
}

/** Options for {@link Mailbox}. */
export interface MailboxOptions {
  /** Produces token ids. Default: `globalThis.crypto.randomUUID()`. */
  readonly idGenerator?: () => string;
}

type TokenState = 'queued' | 'held';

/** A token's place: its state, and its links while queued (a doubly linked list, so removal is O(1)). */
interface Entry {
  readonly token: MailboxToken;
  state: TokenState;
  /** A run gave it back: its id may sit in that run's `partial`, so a withdrawal of it is remembered. */
  givenBack: boolean;
  prev: Entry | null;
  next: Entry | null;
}

/**
 * A FIFO queue of steering messages for agent runs (docs/steering.md).
 *
 * Each token is `queued` until a run takes it (`held`); a held token ends
 * `delivered` when the run completes, or is given back to the front of the
 * queue when it does not (guarantee 7: no steering lost or duplicated). `remove()` withdraws only queued
 * tokens. At most one run uses a mailbox at a time (`acquire`/`release`).
 * Isomorphic: no `node:*` import.
 *
 * Costs: `push`, `remove` and `removeById` are O(1); `take` and `peek` are linear in what is
 * queued. A delivered or removed token leaves nothing behind, except the id of
 * a withdrawn token that a run had given back (`commitPartial` needs it, and
 * forgets it once it has written that run's `partial`).
 *
 * @example
 * const mailbox = new Mailbox();
 * run(agent, 'Analyse the logs.', { mailbox }).subscribe(render);
 * const token = mailbox.push('Focus on the 5xx spike.');
 * mailbox.remove(token); // true only if no run has taken it yet
 */
export class Mailbox {
  readonly #idGenerator: () => string;
  /**
   * Queued and held tokens only: a delivered or removed token is dropped from here (and is then unknown). This and
   * the other collections below are made on first use: a run's own mailbox that is never pushed to holds none.
   */
  #entries: WeakMap<MailboxToken, Entry> | undefined;
  /** Queued tokens only, by id (`removeById`); of two queued tokens with one id, the one queued last. */
  #queuedById: Map<string, Entry> | undefined;
  #head: Entry | null = null;
  #tail: Entry | null = null;
  #size = 0;
  /**
   * Ids of given-back tokens the user withdrew: that run's `partial` still holds them, and
   * must not commit them (docs/steering.md, "commitPartial and withdrawals").
   */
  #withdrawn: Set<string> | undefined;
  #pushed: Subject<MailboxToken> | undefined;
  #pushedView: Observable<MailboxToken> | undefined;
  #withdrawn$: Subject<MailboxToken> | undefined;
  #withdrawnView: Observable<MailboxToken> | undefined;
  #owner: object | undefined;

  /**
   * Hot stream of every pushed token, emitted after it is queued; no replay,
   * never completes. The same Observable on every read.
   */
  get pushed$(): Observable<MailboxToken> {
    return (this.#pushedView ??= (this.#pushed = new Subject<MailboxToken>()).asObservable());
  }

  /**
   * Hot stream of every token withdrawn by `remove()` or `removeById()` (each
   * emitted once, after it left the queue, so it is never delivered); no
   * replay, never completes. A token a run took, or that was delivered, is
   * never emitted: such a `remove()` says false. The same Observable on every read.
   */
  get withdrawn$(): Observable<MailboxToken> {
    return (this.#withdrawnView ??= (this.#withdrawn$ = new Subject<MailboxToken>()).asObservable());
  }

  /** @throws {TypeError} if `options` is not an object or `idGenerator` is not a function. */
  constructor(options?: MailboxOptions) {
    if (options !== undefined && (options === null || typeof options !== 'object')) {
      throw new TypeError('Mailbox: options must be an object');
    }
    const idGenerator = options?.idGenerator;
    if (idGenerator !== undefined && typeof idGenerator !== 'function') {
      throw new TypeError('Mailbox: options.idGenerator must be a function returning a string');
    }
    this.#idGenerator = idGenerator ?? (() => globalThis.crypto.randomUUID());
  }

  /** Number of queued tokens (held, delivered and removed ones excluded). */
  get size(): number {
    return this.#size;
  }

  /** Same as `size > 0`. */
  get hasPending(): boolean {
    return this.#size > 0;
  }

  /**
   * Queues `content` at the back and emits its token on `pushed$`.
   * @throws {TypeError} if `content` is not a string, or the `idGenerator` returns a non-string.
   */
  push(content: string): MailboxToken {
    if (typeof content !== 'string') {
      throw new TypeError(`Mailbox.push: content must be a string, got ${describe(content)}`);
    }
    const id = this.#idGenerator();
    if (typeof id !== 'string') {
      throw new TypeError(`Mailbox: idGenerator must return a string, got ${describe(id)}`);
    }
    const token: MailboxToken = Object.freeze({ id, content });
    const entry: Entry = { token, state: 'queued', givenBack: false, prev: null, next: null };
    (this.#entries ??= new WeakMap()).set(token, entry);
    this.#append(entry);
    this.#pushed?.next(token);
    return token;
  }

  /**
   * Withdraws a queued token (also one given back by a run): `true` guarantees
   * it is never delivered. `false` while a run holds it, once delivered,
   * if already removed, or if the token is not from this mailbox. O(1).
   */
  remove(token: MailboxToken): boolean {
    const entry = this.#entries?.get(token);
    if (entry === undefined || entry.state !== 'queued') return false;
    this.#unlink(entry);
    this.#entries!.delete(token);
    if (entry.givenBack) (this.#withdrawn ??= new Set()).add(token.id);
    this.#withdrawn$?.next(token);
    return true;
  }

  /**
   * `remove()` by the token's `id`, with the same rule: `true` guarantees the queued token with
   * this id is never delivered; `false` while a run holds it, once delivered or removed, or for an
   * id this mailbox never queued. For a UI or server that only kept the id (a steering id sent to a
   * browser). Ids are meant to be unique; should two queued tokens share one (an `idGenerator`
   * that repeats), only the one queued last is found by id. O(1).
   */
  removeById(id: string): boolean {
    const entry = this.#queuedById?.get(id);
    return entry !== undefined && this.remove(entry.token);
  }

  /** Queued tokens, front first (a copy). */
  peek(): readonly MailboxToken[] {
    const out: MailboxToken[] = [];
    for (let e = this.#head; e !== null; e = e.next) out.push(e.token);
    return out;
  }

  /**
   * @internal engine use. Drains every queued token in order and marks it
   * `held`; returns `[]` when none. Pushes after this call queue anew.
   */
  take(): MailboxToken[] {
    const taken: MailboxToken[] = [];
    let e = this.#head;
    this.#head = this.#tail = null;
    this.#size = 0;
    this.#queuedById?.clear();
    while (e !== null) {
      const next = e.next;
      e.state = 'held';
      e.prev = e.next = null;
      taken.push(e.token);
      e = next;
    }
    return taken;
  }

  /**
   * @internal `commitPartial` use. Takes the queued tokens whose id is in
   * `ids` (they become `held`: a `remove()` now says false), in queue order.
   */
  takeById(ids: ReadonlySet<string>): MailboxToken[] {
    const taken: MailboxToken[] = [];
    if (ids.size === 0) return taken;
    for (let e = this.#head; e !== null;) {
      const next = e.next;
      if (ids.has(e.token.id)) {
        this.#unlink(e);
        e.state = 'held';
        taken.push(e.token);
      }
      e = next;
    }
    return taken;
  }

  /** @internal `commitPartial` use. True when a given-back token with this id was withdrawn by `remove()`. */
  wasWithdrawn(id: string): boolean {
    return this.#withdrawn?.has(id) ?? false;
  }

  /** @internal `commitPartial` use. Forgets withdrawals once the partial that held them is written. */
  forgetWithdrawn(ids: Iterable<string>): void {
    const withdrawn = this.#withdrawn;
    if (withdrawn === undefined) return;
    for (const id of ids) withdrawn.delete(id);
  }

  /**
   * @internal engine use. Puts `held` tokens back at the front, in the given
   * order, ahead of anything pushed since the take ("give back to the front"). Tokens
   * that are not held are ignored, so nothing is duplicated.
   */
  giveBack(tokens: readonly MailboxToken[]): void {
    let first: Entry | null = null;
    let last: Entry | null = null;
    let count = 0;
    for (const token of tokens) {
      const entry = this.#entries?.get(token);
      if (entry === undefined || entry.state !== 'held') continue;
      entry.state = 'queued';
      entry.givenBack = true;
      this.#index(entry);
      entry.prev = last;
      entry.next = null;
      if (last === null) first = entry;
      else last.next = entry;
      last = entry;
      count++;
    }
    if (first === null || last === null) return;
    last.next = this.#head;
    if (this.#head !== null) this.#head.prev = last;
    else this.#tail = last;
    this.#head = first;
    this.#size += count;
  }

  /** @internal engine use. Marks `held` tokens `delivered` (they are forgotten); others are ignored. */
  markDelivered(tokens: readonly MailboxToken[]): void {
    const entries = this.#entries;
    if (entries === undefined) return;
    for (const token of tokens) {
      if (entries.get(token)?.state === 'held') entries.delete(token);
    }
  }

  /**
   * @internal engine use. Claims the mailbox for one run ("one run per
   * mailbox and session"). `true` if it was free or is already owned by `owner`;
   * `false` if another owner holds it.
   */
  acquire(owner: object): boolean {
    if (this.#owner !== undefined && this.#owner !== owner) return false;
    this.#owner = owner;
    return true;
  }

  /** @internal engine use. Frees the mailbox if `owner` holds it; otherwise a no-op. */
  release(owner: object): void {
    if (this.#owner === owner) this.#owner = undefined;
  }

  #append(entry: Entry): void {
    this.#index(entry);
    entry.prev = this.#tail;
    entry.next = null;
    if (this.#tail !== null) this.#tail.next = entry;
    else this.#head = entry;
    this.#tail = entry;
    this.#size++;
  }

  /** Indexes a token that becomes queued by its id (for `removeById`). */
  #index(entry: Entry): void {
    (this.#queuedById ??= new Map()).set(entry.token.id, entry);
  }

  /** Every token leaving the queue other than through `take()` goes through here. */
  #unlink(entry: Entry): void {
    const byId = this.#queuedById;
    if (byId !== undefined && byId.get(entry.token.id) === entry) byId.delete(entry.token.id);
    if (entry.prev !== null) entry.prev.next = entry.next;
    else this.#head = entry.next;
    if (entry.next !== null) entry.next.prev = entry.prev;
    else this.#tail = entry.prev;
    entry.prev = entry.next = null;
    this.#size--;
  }
}

function describe(value: unknown): string {
  return value === null ? 'null' : typeof value;
}
