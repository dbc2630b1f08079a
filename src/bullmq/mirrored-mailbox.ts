import { Mailbox, type MailboxToken } from '../mailbox/mailbox.js';
import type { WireItem } from './requests.js';

/**
 * The in-memory `Mailbox` of a run on a worker, mirrored into the run's mailbox hash in Redis as it changes, in
 * the same step (each change is a command sent before the call returns, in order on the worker's connection):
 * a push adds the item (queued), a take marks the items held, a give-back queued again, a delivery or a
 * withdrawal removes them. So when the worker dies, whoever detects it gives every item the run had — queued
 * or held — back to the front of the thread's steering, in mailbox order (`n`). The engine sees a plain
 * Mailbox: it does not change for this. Each write goes through `mirror`, which writes only while the run's
 * claim is current (the `lcMailbox` script): a worker declared lost changes nothing its peers rely on.
 */
export class MirroredMailbox extends Mailbox {
  #forcedId: string | undefined;
  #n: number;
  readonly #order = new Map<string, number>();

  /**
   * @param mirror writes to the run's mailbox hash (in order; fenced by the run's claim token)
   * @param claimed the items the run's claim moved from the thread's steering (already in the hash, as 1…k)
   * @param tag the tag of an item (`mac`, for the run's thread) written with it, so it is taken back as signed
   */
  constructor(
    private readonly mirror: MailboxMirror,
    claimed: readonly WireItem[],
    private readonly tag: (id: string, content: string) => string = () => '',
  ) {
    super({
      idGenerator: () => {
        const id = this.#forcedId ?? globalThis.crypto.randomUUID();
        this.#forcedId = undefined;
        return id;
      },
    });
    this.#n = 0;
    for (const item of claimed) this.#pushWith(item.id, item.content, false);
  }

  /** Pushes steering keeping the id the client gave it (its steering id), or a new one. */
  pushItem(content: string, id?: string): MailboxToken {
    return this.#pushWith(id, content, true);
  }

  #pushWith(id: string | undefined, content: string, mirror: boolean): MailboxToken {
    this.#forcedId = id;
    this.#mirrorNext = mirror;
    try {
      return this.push(content);
    } finally {
      this.#forcedId = undefined;
      this.#mirrorNext = true;
    }
  }

  #mirrorNext = true;

  override push(content: string): MailboxToken {
    const mirror = this.#mirrorNext;
    const token = super.push(content);
    this.#order.set(token.id, ++this.#n);
    if (mirror) this.#write(token, 0);
    return token;
  }

  override remove(token: MailboxToken): boolean {
    const removed = super.remove(token);
    if (removed) this.#drop([token]);
    return removed;
  }

  override take(): MailboxToken[] {
    const taken = super.take();
    for (const token of taken) this.#write(token, 1);
    return taken;
  }

  override takeById(ids: ReadonlySet<string>): MailboxToken[] {
    const taken = super.takeById(ids);
    for (const token of taken) this.#write(token, 1);
    return taken;
  }

  override giveBack(tokens: readonly MailboxToken[]): void {
    super.giveBack(tokens);
    const queued = new Set(this.peek());
    for (const token of tokens) if (queued.has(token)) this.#write(token, 0);
  }

  override markDelivered(tokens: readonly MailboxToken[]): void {
    super.markDelivered(tokens);
    this.#drop(tokens);
  }

  #write(token: MailboxToken, held: 0 | 1): void {
    const n = this.#order.get(token.id) ?? ++this.#n;
    const mac = this.tag(token.id, token.content) || undefined;
    const json = JSON.stringify({ id: token.id, content: token.content, mac, n, held });
    this.mirror.set(token.id, json);
  }

  #drop(tokens: readonly MailboxToken[]): void {
    if (tokens.length === 0) return;
    for (const token of tokens) this.#order.delete(token.id);
    this.mirror.del(tokens.map((t) => t.id));
  }
}

/** Where a {@link MirroredMailbox} writes: its run's mailbox hash, only while the run's claim is current. */
export interface MailboxMirror {
  /** Stores the item `id` as `json` (`{ id, content, mac, n, held }`). Never throws. */
  set(id: string, json: string): void;
  /** Removes the items with these ids. Never throws. */
  del(ids: readonly string[]): void;
}
