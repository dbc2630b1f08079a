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

type TokenState = 'queued' | 'held' | 'delivered' | 'removed';

/**
 * A FIFO queue of steering messages for agent runs (docs/steering.md).
 *
 * Each token is `queued` until a run takes it (`held`); a held token ends
 * `delivered` when the run completes, or is given back to the front of the
 * queue when it does not (guarantee 7: no steering lost or duplicated). `remove()` withdraws only queued
 * tokens. At most one run uses a mailbox at a time (`acquire`/`release`).
 * Isomorphic: no `node:*` import.
 *
 * @example
 * const mailbox = new Mailbox();
 * run(agent, 'Analyse the logs.', { mailbox }).subscribe(render);
 * const token = mailbox.push('Focus on the 5xx spike.');
 * mailbox.remove(token); // true only if no run has taken it yet
 */
export class Mailbox {
  readonly #idGenerator: () => string;
  #queue: MailboxToken[] = [];
  readonly #states = new WeakMap<MailboxToken, TokenState>();
  /**
   * Ids the user withdrew: a `partial` may still hold them, and must not commit them
   * (docs/steering.md, "commitPartial and withdrawals").
   */
  readonly #withdrawn = new Set<string>();
  readonly #pushed = new Subject<MailboxToken>();
  #owner: object | undefined;

  /**
   * Hot stream of every pushed token, emitted after it is queued; no replay,
   * never completes.
   */
  readonly pushed$: Observable<MailboxToken> = this.#pushed.asObservable();

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
    return this.#queue.length;
  }

  /** Same as `size > 0`. */
  get hasPending(): boolean {
    return this.#queue.length > 0;
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
    this.#states.set(token, 'queued');
    this.#queue.push(token);
    this.#pushed.next(token);
    return token;
  }

  /**
   * Withdraws a queued token (also one given back by a run): `true` guarantees
   * it is never delivered. `false` while a run holds it, once delivered,
   * if already removed, or if the token is not from this mailbox.
   */
  remove(token: MailboxToken): boolean {
    if (this.#states.get(token) !== 'queued') return false;
    this.#states.set(token, 'removed');
    this.#withdrawn.add(token.id);
    const index = this.#queue.indexOf(token);
    if (index !== -1) this.#queue.splice(index, 1);
    return true;
  }

  /** Queued tokens, front first (a copy). */
  peek(): readonly MailboxToken[] {
    return this.#queue.slice();
  }

  /**
   * @internal engine use. Drains every queued token in order and marks it
   * `held`; returns `[]` when none. Pushes after this call queue anew.
   */
  take(): MailboxToken[] {
    const taken = this.#queue;
    this.#queue = [];
    for (const token of taken) this.#states.set(token, 'held');
    return taken;
  }

  /**
   * @internal `commitPartial` use. Takes the queued tokens whose id is in
   * `ids` (they become `held`: a `remove()` now says false), in queue order.
   */
  takeById(ids: ReadonlySet<string>): MailboxToken[] {
    const taken = this.#queue.filter((t) => ids.has(t.id));
    if (taken.length === 0) return taken;
    this.#queue = this.#queue.filter((t) => !ids.has(t.id));
    for (const token of taken) this.#states.set(token, 'held');
    return taken;
  }

  /** @internal `commitPartial` use. True when a token with this id was withdrawn by `remove()`. */
  wasWithdrawn(id: string): boolean {
    return this.#withdrawn.has(id);
  }

  /**
   * @internal engine use. Puts `held` tokens back at the front, in the given
   * order, ahead of anything pushed since the take ("give back to the front"). Tokens
   * that are not held are ignored, so nothing is duplicated.
   */
  giveBack(tokens: readonly MailboxToken[]): void {
    const back: MailboxToken[] = [];
    for (const token of tokens) {
      if (this.#states.get(token) !== 'held') continue;
      this.#states.set(token, 'queued');
      back.push(token);
    }
    if (back.length > 0) this.#queue = back.concat(this.#queue);
  }

  /** @internal engine use. Marks `held` tokens `delivered`; others are ignored. */
  markDelivered(tokens: readonly MailboxToken[]): void {
    for (const token of tokens) {
      if (this.#states.get(token) === 'held') this.#states.set(token, 'delivered');
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
}

function describe(value: unknown): string {
  return value === null ? 'null' : typeof value;
}
