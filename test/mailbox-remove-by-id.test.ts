import { describe, expect, it } from 'vitest';
import { Mailbox } from '../src/index.js';

/** `removeById(id)` follows `remove(token)`'s rule: only a queued token is withdrawn. */

const counter = () => {
  let n = 0;
  return () => `s${++n}`;
};

describe('Mailbox.removeById: remove() by the token id', () => {
  it('queued → true and never taken; a second call → false', () => {
    const mailbox = new Mailbox({ idGenerator: counter() });
    const a = mailbox.push('a');
    const b = mailbox.push('b');
    expect(mailbox.removeById(a.id)).toBe(true);
    expect(mailbox.removeById(a.id)).toBe(false);
    expect(mailbox.remove(a)).toBe(false);
    expect(mailbox.peek()).toEqual([b]);
    expect(mailbox.take()).toEqual([b]);
  });

  it('held → false; given back → true (and remembered as withdrawn); delivered → false', () => {
    const mailbox = new Mailbox({ idGenerator: counter() });
    const a = mailbox.push('a');
    const b = mailbox.push('b');
    expect(mailbox.take()).toEqual([a, b]);
    expect(mailbox.removeById('s1')).toBe(false);
    mailbox.giveBack([a, b]);
    expect(mailbox.removeById('s1')).toBe(true);
    expect(mailbox.wasWithdrawn('s1')).toBe(true);
    expect(mailbox.peek()).toEqual([b]);
    expect(mailbox.take()).toEqual([b]);
    mailbox.markDelivered([b]);
    expect(mailbox.removeById('s2')).toBe(false);
    expect(mailbox.size).toBe(0);
  });

  it('an id this mailbox never queued → false; a token removed by identity is gone by id too', () => {
    const mailbox = new Mailbox({ idGenerator: counter() });
    expect(mailbox.removeById('s1')).toBe(false);
    const a = mailbox.push('a');
    expect(mailbox.remove(a)).toBe(true);
    expect(mailbox.removeById(a.id)).toBe(false);
    expect(new Mailbox({ idGenerator: counter() }).removeById(mailbox.push('x').id)).toBe(false);
  });

  it('taken by commitPartial (takeById) → false', () => {
    const mailbox = new Mailbox({ idGenerator: counter() });
    const a = mailbox.push('a');
    mailbox.take();
    mailbox.giveBack([a]);
    expect(mailbox.takeById(new Set(['s1']))).toEqual([a]);
    expect(mailbox.removeById('s1')).toBe(false);
  });

  it('two queued tokens with one id: the one queued last is withdrawn, the first stays', () => {
    const mailbox = new Mailbox({ idGenerator: () => 'same' });
    const first = mailbox.push('first');
    mailbox.push('second');
    expect(mailbox.removeById('same')).toBe(true);
    expect(mailbox.peek()).toEqual([first]);
  });

  it('100 000 push + removeById pairs leave the id index empty (size 0, every call true)', () => {
    const mailbox = new Mailbox();
    let removed = 0;
    for (let i = 0; i < 100_000; i++) if (mailbox.removeById(mailbox.push(`m${i}`).id)) removed++;
    expect(removed).toBe(100_000);
    expect(mailbox.size).toBe(0);
    expect(mailbox.removeById('anything')).toBe(false);
  });
});
