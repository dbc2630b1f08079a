import type { ContractFramework } from './kit.js';
import { cancelContract } from './provider-contract-cancel.js';
import { loopContract } from './provider-contract-loop.js';
import { recoveryContract } from './provider-contract-recovery.js';
import { streamContract } from './provider-contract-stream.js';
import type { ProviderKit } from './provider-kit.js';

/**
 * Registers the specs every `ModelProvider` must pass, with the test framework's own `describe`, `it`
 * and `expect` (so loopctl does not depend on one), against a local server (`startWireServer`, node:http
 * on 127.0.0.1) that speaks the provider's wire format as `kit.wire` describes it and refuses (400) any
 * request the real API would refuse. One fresh server and provider per test (docs/testing.md,
 * "Proving a provider adapter"):
 * - streaming: text and tool calls (arguments in pieces, two parallel calls) become `text_delta` /
 *   `tool_call_delta` events and exactly one `response` with the right text, calls, `finishReason` and
 *   usage, streamed and not; in a run, the documented event sequence with the usage on
 *   `model_response_completed` and on the terminal;
 * - a malformed event: `run_failed` with a `ModelOutputError` (`malformed_chunk`) naming the field;
 * - cancel at every checkpoint of a model call (a streamed request before and after its headers,
 *   mid-stream, a non-streamed request before and after its headers, the rescue, the backoff after a
 *   429, during a tool): `run_cancelled` with its phase before `cancel()` returns, and the server sees
 *   the socket close unfinished (no further request after the backoff or the tool);
 * - the first-event, idle and request deadlines (short real deadlines; no check asserts a duration);
 * - a 429 with `retry-after`: retried after exactly that delay (as `retry_scheduled` reports it); a 400
 *   not retried;
 * - a `length` finish, streamed and not;
 * - a stream cut, or failed by an in-stream error event, after its first delta: rescued by one
 *   non-streamed request;
 * - a three-turn tool loop whose every request the server accepted, and a validator that refuses the
 *   kit's invalid variants of the last request.
 *
 * Each test takes a few real milliseconds but for the retry-after one (about 1 s: the server asks for it).
 *
 * @example
 * import { describe, it, expect } from 'vitest';
 * import { providerContract, openaiChatKit } from 'loopctl/node/testing';
 * describe('openaiChat', () => providerContract({ describe, it, expect }, openaiChatKit()));
 */
export function providerContract(framework: ContractFramework, kit: ProviderKit): void {
  framework.describe(`provider contract: ${kit.name}`, () => {
    streamContract(framework, kit);
    cancelContract(framework, kit);
    recoveryContract(framework, kit);
    loopContract(framework, kit);
  });
}
