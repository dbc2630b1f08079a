import { describe, expect, it } from 'vitest';
import { Mailbox, type MailboxToken } from '../src/mailbox/index.js';

function counter(): () => string {
  let n = 0;
  return () => `m${n++}`;
}

const ids = (tokens: readonly MailboxToken[]) => tokens.map((t) => t.id);

describe('Mailbox', () => {
  it('queues pushes in order: push/peek/size', () => {
    const mailbox = new Mailbox({ idGenerator: counter() });
    expect(mailbox.size).toBe(0);
    expect(mailbox.hasPending).toBe(false);
    expect(mailbox.peek()).toEqual([]);
    const a = mailbox.push('a');
    const b = mailbox.push('b');
    expect(a).toEqual({ id: 'm0', content: 'a' });
    expect(b).toEqual({ id: 'm1', content: 'b' });
    expect(Object.isFrozen(a)).toBe(true);
    expect(mailbox.size).toBe(2);
    expect(mailbox.hasPending).toBe(true);
    expect(mailbox.peek()).toEqual([a, b]);
  });

  it('peek returns a copy', () => {
    const mailbox = new Mailbox();
    const a = mailbox.push('a');
    const copy = mailbox.peek() as MailboxToken[];
    copy.pop();
    expect(mailbox.peek()).toEqual([a]);
  });

  it('uses crypto.randomUUID ids by default', () => {
    const mailbox = new Mailbox();
    const a = mailbox.push('a');
    const b = mailbox.push('b');
    expect(a.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(a.id).not.toBe(b.id);
  });

  it('remove while queued → true, and the item is never taken', () => {
    const mailbox = new Mailbox({ idGenerator: counter() });
    const a = mailbox.push('a');
    const b = mailbox.push('b');
    expect(mailbox.remove(a)).toBe(true);
    expect(mailbox.size).toBe(1);
    expect(mailbox.peek()).toEqual([b]);
    expect(mailbox.take()).toEqual([b]);
    expect(mailbox.remove(a)).toBe(false);
  });

  it('remove while held → false; after giveBack → true; after markDelivered → false', () => {
    const mailbox = new Mailbox({ idGenerator: counter() });
    const a = mailbox.push('a');
    const b = mailbox.push('b');
    expect(mailbox.take()).toEqual([a, b]);
    expect(mailbox.size).toBe(0);
    expect(mailbox.remove(a)).toBe(false);

    mailbox.giveBack([a, b]);
    expect(mailbox.remove(a)).toBe(true);
    expect(mailbox.peek()).toEqual([b]);

    expect(mailbox.take()).toEqual([b]);
    mailbox.markDelivered([b]);
    expect(mailbox.remove(b)).toBe(false);
    mailbox.giveBack([b]);
    expect(mailbox.size).toBe(0);
  });

  it('remove of an unknown token → false', () => {
    const mailbox = new Mailbox();
    const other = new Mailbox().push('x');
    expect(mailbox.remove(other)).toBe(false);
    expect(mailbox.remove({ id: 'x', content: 'x' })).toBe(false);
  });

  it('take returns [] when empty', () => {
    expect(new Mailbox().take()).toEqual([]);
  });

  it('giveBack puts held items at the front, before pushes made meanwhile', () => {
    const mailbox = new Mailbox({ idGenerator: counter() });
    const a = mailbox.push('a');
    const b = mailbox.push('b');
    const taken = mailbox.take();
    expect(taken).toEqual([a, b]);
    const c = mailbox.push('c');
    mailbox.giveBack(taken);
    expect(mailbox.peek()).toEqual([a, b, c]);
    expect(ids(mailbox.peek())).toEqual(['m0', 'm1', 'm2']);
    expect(mailbox.take()).toEqual([a, b, c]);
  });

  it('a push from inside a pushed$ subscriber during a take lands after given-back items', () => {
    const mailbox = new Mailbox({ idGenerator: counter() });
    const a = mailbox.push('a');
    const taken = mailbox.take();
    const echoes: MailboxToken[] = [];
    const sub = mailbox.pushed$.subscribe((token) => {
      if (token.content === 'c') echoes.push(mailbox.push('d'));
    });
    const c = mailbox.push('c');
    mailbox.giveBack(taken);
    sub.unsubscribe();
    expect(echoes).toHaveLength(1);
    expect(mailbox.peek()).toEqual([a, c, echoes[0]]);
    expect(mailbox.peek().map((t) => t.content)).toEqual(['a', 'c', 'd']);
  });

  it('a take from inside a pushed$ subscriber sees the pushed item', () => {
    const mailbox = new Mailbox({ idGenerator: counter() });
    let inner: MailboxToken[] = [];
    const sub = mailbox.pushed$.subscribe(() => {
      inner = mailbox.take();
    });
    const a = mailbox.push('a');
    sub.unsubscribe();
    expect(inner).toEqual([a]);
    expect(mailbox.size).toBe(0);
    const b = mailbox.push('b');
    mailbox.giveBack(inner);
    expect(mailbox.peek()).toEqual([a, b]);
  });

  it('giveBack ignores tokens that are not held (no duplicates)', () => {
    const mailbox = new Mailbox({ idGenerator: counter() });
    const a = mailbox.push('a');
    mailbox.giveBack([a]); // queued, not held
    expect(mailbox.peek()).toEqual([a]);
    const taken = mailbox.take();
    mailbox.giveBack(taken);
    mailbox.giveBack(taken); // already queued again
    mailbox.giveBack([a, a]);
    expect(mailbox.peek()).toEqual([a]);
    const foreign = new Mailbox().push('x');
    mailbox.giveBack([foreign]);
    expect(mailbox.peek()).toEqual([a]);
  });

  it('giveBack of a subset keeps the given order', () => {
    const mailbox = new Mailbox({ idGenerator: counter() });
    const a = mailbox.push('a');
    const b = mailbox.push('b');
    const c = mailbox.push('c');
    mailbox.take();
    mailbox.markDelivered([b]);
    mailbox.giveBack([a, b, c]);
    expect(mailbox.peek()).toEqual([a, c]);
  });

  it('acquire/release with two owners', () => {
    const mailbox = new Mailbox();
    const one = {};
    const two = {};
    expect(mailbox.acquire(one)).toBe(true);
    expect(mailbox.acquire(one)).toBe(true);
    expect(mailbox.acquire(two)).toBe(false);
    mailbox.release(two); // not the owner: no-op
    expect(mailbox.acquire(two)).toBe(false);
    mailbox.release(one);
    expect(mailbox.acquire(two)).toBe(true);
    expect(mailbox.acquire(one)).toBe(false);
    mailbox.release(two);
    expect(mailbox.acquire(one)).toBe(true);
  });

  it('pushed$ emits each token, hot and without replay', () => {
    const mailbox = new Mailbox({ idGenerator: counter() });
    const early = mailbox.push('early');
    const seen: MailboxToken[] = [];
    const sub = mailbox.pushed$.subscribe((t) => seen.push(t));
    const a = mailbox.push('a');
    const b = mailbox.push('b');
    sub.unsubscribe();
    mailbox.push('late');
    expect(seen).toEqual([a, b]);
    expect(seen[0]).toBe(a);
    expect(seen).not.toContain(early);
  });

  it('withdrawn$ emits each token remove() or removeById() withdrew, once, hot and without replay', () => {
    const mailbox = new Mailbox({ idGenerator: counter() });
    const early = mailbox.push('early');
    expect(mailbox.remove(early)).toBe(true);
    const seen: MailboxToken[] = [];
    const sizes: number[] = [];
    const sub = mailbox.withdrawn$.subscribe((t) => (seen.push(t), sizes.push(mailbox.size)));
    const a = mailbox.push('a');
    const b = mailbox.push('b');
    const held = mailbox.push('held');
    expect(mailbox.remove(a)).toBe(true);
    expect(mailbox.remove(a)).toBe(false); // already withdrawn: not emitted again
    expect(mailbox.removeById(b.id)).toBe(true);
    mailbox.take();
    expect(mailbox.remove(held)).toBe(false); // a run holds it: nothing withdrawn
    sub.unsubscribe();
    const late = mailbox.push('late');
    mailbox.remove(late);
    expect(seen).toEqual([a, b]);
    expect(seen[0]).toBe(a);
    expect(sizes).toEqual([2, 1]); // emitted after the token left the queue
  });

  it('pushed$ emits after the token is queued', () => {
    const mailbox = new Mailbox();
    let sizeSeen = -1;
    mailbox.pushed$.subscribe(() => (sizeSeen = mailbox.size));
    mailbox.push('a');
    expect(sizeSeen).toBe(1);
  });

  it('takes ids from an injected generator', () => {
    const mailbox = new Mailbox({ idGenerator: counter() });
    expect(ids([mailbox.push('x'), mailbox.push('y'), mailbox.push('z')])).toEqual(['m0', 'm1', 'm2']);
  });

  it('throws TypeError naming the field for bad content', () => {
    const mailbox = new Mailbox();
    expect(() => mailbox.push(42 as unknown as string)).toThrow(TypeError);
    expect(() => mailbox.push(undefined as unknown as string)).toThrow(/content/);
    expect(mailbox.size).toBe(0);
  });

  it('throws TypeError naming the field for bad options', () => {
    const bad = (options: unknown) => () => new Mailbox(options as never);
    expect(bad({ idGenerator: 'nope' })).toThrow(TypeError);
    expect(bad({ idGenerator: 'nope' })).toThrow(/idGenerator/);
    expect(bad(null)).toThrow(TypeError);
    expect(bad(5)).toThrow(/options/);
    expect(() => new Mailbox({})).not.toThrow();
    expect(() => new Mailbox(undefined)).not.toThrow();
  });

  it('throws TypeError when the idGenerator returns a non-string', () => {
    const mailbox = new Mailbox({ idGenerator: () => 7 as unknown as string });
    expect(() => mailbox.push('a')).toThrow(/idGenerator/);
    expect(mailbox.size).toBe(0);
  });
});
