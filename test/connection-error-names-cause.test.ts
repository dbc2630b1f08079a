/**
 * A connection error names the address and the cause, for every kind of
 * connection failure, not only those with a socket errno: a TLS handshake with
 * a server that does not speak TLS, a certificate the client refuses, a port
 * fetch will not connect to. The model call's error carries the cause (its
 * code, and its words in the message), and the CLI's line names it.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { ModelCallError, openaiChat, serializeError, type ModelEvent } from '../src/index.js';
import { toModelCallError } from '../src/model/openai/errors.js';
import { describeError } from '../src/cli/describe-error.js';
import { collect } from './support/openai-server.js';

const items = [{ type: 'user' as const, id: 'u', text: 'hi' }];
const request = { model: 'm', instructions: '', items, tools: [], stream: true };

let server: Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

async function failure(baseURL: string): Promise<ModelCallError> {
  const { error } = await collect<ModelEvent>(openaiChat({ model: 'm', apiKey: 'k', baseURL }).call(request));
  expect(error).toBeInstanceOf(ModelCallError);
  return error as ModelCallError;
}

describe('a connection error names its cause', () => {
  it('https:// to a server that speaks plain HTTP: the TLS failure is named, with its code', async () => {
    server = createServer((_req, res) => res.end('plain'));
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', () => resolve()));
    const { port } = server.address() as AddressInfo;
    const baseURL = `https://127.0.0.1:${port}/v1`;
    const error = await failure(baseURL);
    expect(error).toMatchObject({ retryable: true, status: undefined, code: 'ERR_SSL_WRONG_VERSION_NUMBER' });
    expect(error.message).toBe('Connection error: wrong version number');
    expect(describeError(serializeError(error), { baseURL })).toBe(
      `cannot talk to 127.0.0.1:${port}: TLS handshake failed, the server does not speak TLS ` +
        `(is the URL http://?) (ERR_SSL_WRONG_VERSION_NUMBER)`,
    );
  });

  it('a port fetch refuses to connect to: its reason, with no code', async () => {
    const baseURL = 'http://127.0.0.1:1/v1';
    const error = await failure(baseURL);
    expect(error).toMatchObject({ retryable: true, code: undefined });
    expect(error.message).toBe('Connection error: bad port');
    expect(describeError(serializeError(error), { baseURL })).toBe('cannot talk to 127.0.0.1:1: bad port');
  });

  it('a certificate the client refuses: the reason in words and the code', () => {
    const cause = new TypeError('fetch failed', {
      cause: Object.assign(new Error('self-signed certificate'), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' }),
    });
    const error = toModelCallError(new OpenAI.APIConnectionError({ cause }), { streamStarted: false });
    expect(error).toMatchObject({ retryable: true, code: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
    expect(error.message).toBe('Connection error: self-signed certificate');
    expect(describeError(serializeError(error), { baseURL: 'https://llm.example:8443/v1' })).toBe(
      "cannot talk to llm.example:8443: the server's TLS certificate is self-signed (DEPTH_ZERO_SELF_SIGNED_CERT)",
    );
  });

  it('a socket errno keeps its short form; an SDK connection error with no cause says just that', () => {
    const refused = toModelCallError(
      new OpenAI.APIConnectionError({
        cause: new TypeError('fetch failed', {
          cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' }),
        }),
      }),
      { streamStarted: false },
    );
    const message = 'Connection error: connect ECONNREFUSED 127.0.0.1:9';
    expect(refused).toMatchObject({ code: 'ECONNREFUSED', message });
    expect(describeError(serializeError(refused), { baseURL: 'http://127.0.0.1:9/v1' })).toBe(
      'cannot talk to 127.0.0.1:9: connection refused (ECONNREFUSED)',
    );
    const bare = toModelCallError(new OpenAI.APIConnectionError({}), { streamStarted: false });
    expect(bare).toMatchObject({ message: 'Connection error.', code: undefined });
    const line = describeError(serializeError(bare), { baseURL: 'http://h:1/v1' });
    expect(line).toBe('cannot talk to h:1: connection error');
  });
});
