/**
 * Options are foreign values too: ones that cannot be read (a getter that throws, a revoked Proxy)
 * made run()/start() throw a raw TypeError, or the thrown value itself, instead of the documented
 * "ConfigurationError naming the field, before anything runs" (bad input: a typed error naming the field).
 */
import { describe, expect, it } from 'vitest';
import { ConfigurationError, defineAgent, run, start } from '../src/index.js';
import { scriptedModel } from '../src/testing/index.js';

const revoked = (): any => {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
};
const throwingGetter = (target: object, key: string): any =>
  Object.defineProperty(target, key, {
    get() {
      throw revoked();
    },
    enumerable: true,
  });

const agent = defineAgent({ name: 'a', instructions: '', model: scriptedModel(['done']) });

/** What `call` threw: its class and field, or 'nothing'. */
function thrownBy(call: () => unknown): unknown {
  try {
    call();
  } catch (e) {
    return e instanceof ConfigurationError ? { ConfigurationError: e.field } : e;
  }
  return 'nothing';
}

describe('options that cannot be read: a ConfigurationError naming the field', () => {
  const cases: [string, () => [input: unknown, options: unknown], string][] = [
    [
      'a session whose load getter throws',
      () => ['go', { session: throwingGetter({ append() {} }, 'load') }],
      'options.session.load',
    ],
    [
      'a session whose acquire getter throws',
      () => ['go', { session: throwingGetter({ load() {}, append() {} }, 'acquire') }],
      'options.session.acquire',
    ],
    [
      'a session whose acquire is not a function',
      () => ['go', { session: { load() {}, append() {}, acquire: 1 } }],
      'options.session.acquire',
    ],
    ['a session: a revoked Proxy', () => ['go', { session: revoked() }], 'options.session'],
    ['hooks: a revoked Proxy', () => ['go', { hooks: revoked() }], 'options.hooks'],
    [
      'a hook whose getter throws',
      () => ['go', { hooks: throwingGetter({}, 'turnStarted') }],
      'options.hooks.turnStarted',
    ],
    ['deadlines: a revoked Proxy', () => ['go', { deadlines: revoked() }], 'options.deadlines'],
    [
      'a deadline whose getter throws',
      () => ['go', { deadlines: throwingGetter({}, 'idleMs') }],
      'options.deadlines.idleMs',
    ],
    ['retry: a revoked Proxy', () => ['go', { retry: revoked() }], 'options.retry'],
    ['cancel: a revoked Proxy', () => ['go', { cancel: revoked() }], 'options.cancel'],
    ['signal: a revoked Proxy', () => ['go', { signal: revoked() }], 'options.signal'],
    ['mailbox: a revoked Proxy', () => ['go', { mailbox: revoked() }], 'options.mailbox'],
    ['cancel$: a revoked Proxy', () => ['go', { cancel$: revoked() }], 'options.cancel$'],
    ['an option whose getter throws', () => ['go', throwingGetter({}, 'signal')], 'options.signal'],
    ['the options: a revoked Proxy', () => ['go', revoked()], 'options'],
    ['the input: a revoked Proxy', () => [revoked(), {}], 'input'],
    ['an input Item: a revoked Proxy', () => [[{ type: 'user', id: 'u', text: 'hi' }, revoked()], {}], 'input[1]'],
  ];
  for (const [name, args, field] of cases) {
    it(`${name}: run() and start() throw ConfigurationError(${field})`, () => {
      expect(thrownBy(() => run(agent, ...(args() as [never, never])))).toEqual({ ConfigurationError: field });
      expect(thrownBy(() => start(agent, ...(args() as [never, never])))).toEqual({ ConfigurationError: field });
    });
  }

  it('start(): replay whose getter throws names options.replay', () => {
    const thrown = thrownBy(() => start(agent, 'go', throwingGetter({}, 'replay')));
    expect(thrown).toEqual({ ConfigurationError: 'options.replay' });
  });
});
