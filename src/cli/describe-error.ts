import type { BudgetFigures, Cost, SerializedError, Usage } from '../index.js';
import { sanitizeLine } from './sanitize.js';

/** What socket and TLS error codes mean, in a few words. */
const SOCKET_ERRORS: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset by the server',
  ENOTFOUND: 'host name not found',
  EAI_AGAIN: 'host name lookup failed (temporary)',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  EPIPE: 'connection closed by the server',
  UND_ERR_SOCKET: 'connection closed by the server',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
  ERR_SSL_WRONG_VERSION_NUMBER: 'TLS handshake failed, the server does not speak TLS (is the URL http://?)',
  DEPTH_ZERO_SELF_SIGNED_CERT: "the server's TLS certificate is self-signed",
  SELF_SIGNED_CERT_IN_CHAIN: "the server's TLS certificate chain is self-signed",
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: "the server's TLS certificate cannot be verified",
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: "the server's TLS certificate has an unknown issuer",
  CERT_HAS_EXPIRED: "the server's TLS certificate has expired",
  ERR_TLS_CERT_ALTNAME_INVALID: "the server's TLS certificate is for another host name",
};

/**
 * A duration for a person: in seconds to a tenth from 0.1 s (`60 s`, `1.5 s`), in whole ms below (`37 ms`; `--timeout`
 * goes down to 0.001 s), `under 1 ms` for a fraction of one: never `0 s` for a wait that was not nothing.
 */
export function durationText(ms: number): string {
  if (ms >= 100) return `${Math.round(ms / 100) / 10} s`;
  if (ms > 0 && ms < 0.5) return 'under 1 ms';
  return `${Math.round(ms)} ms`;
}

/** The host (and port) of `baseURL`, as a connection error names it; the URL itself when it does not parse. */
export function addressOf(baseURL: string): string {
  try {
    return new URL(baseURL).host;
  } catch {
    return baseURL;
  }
}

/**
 * One line naming an error's cause, for a person: a deadline says which wait
 * and how long; a connection error names the server's address (`baseURL`)
 * and the errno; a 429 says "rate limited, retry after N s" when the server
 * gave a time; anything else is `Name: message`. The message comes from
 * outside (a server, a tool), so the line is sanitised (one line, no control
 * characters).
 */
export function describeError(error: SerializedError, context: { readonly baseURL?: string } = {}): string {
  const field = (key: string): unknown => (error as unknown as Record<string, unknown>)[key];
  const message = String(error.message);
  if (error.name === 'TimeoutError') {
    const ms = typeof field('timeoutMs') === 'number' ? (field('timeoutMs') as number) : undefined;
    const kind = field('kind');
    if (ms !== undefined && kind === 'first_event') {
      return `the model sent nothing within ${durationText(ms)} (first-event deadline)`;
    }
    if (ms !== undefined && kind === 'idle')
      return `the model's stream went silent for ${durationText(ms)} (idle deadline)`;
    if (ms !== undefined && kind === 'request') {
      return `no complete answer from the model within ${durationText(ms)} (request deadline)`;
    }
  }
  if (error.name === 'ModelCallError') {
    const code = typeof field('code') === 'string' ? (field('code') as string) : undefined;
    const status = typeof field('status') === 'number' ? (field('status') as number) : undefined;
    const where = context.baseURL ? addressOf(context.baseURL) : 'the server';
    if (code !== undefined && Object.hasOwn(SOCKET_ERRORS, code)) {
      return sanitizeLine(`cannot talk to ${where}: ${SOCKET_ERRORS[code]} (${code})`);
    }
    if (status === 429) {
      const after = field('retryAfterMs');
      if (/^rate limited/i.test(message)) return sanitizeLine(`${message} (HTTP 429)`);
      if (typeof after === 'number') {
        return sanitizeLine(`rate limited, retry after ${durationText(after)} (HTTP 429: ${message})`);
      }
      return sanitizeLine(`rate limited (HTTP 429: ${message})`);
    }
    if (status === undefined && /^connection error\.?$/i.test(message)) {
      return `cannot talk to ${where}: connection error${code === undefined ? '' : ` (${code})`}`;
    }
    const cause = status === undefined ? /^connection error: (.+)$/is.exec(message) : null;
    if (cause) return sanitizeLine(`cannot talk to ${where}: ${cause[1]}${code === undefined ? '' : ` (${code})`}`);
    return sanitizeLine(message);
  }
  return sanitizeLine(`${error.name}: ${message}`);
}

/**
 * Token usage for the summary line: `usage 3 in + 2 out = 5 tokens`; when
 * `usage.reported` is false (a response reported none), "usage unknown" if
 * nothing was counted, else the counted totals marked as a lower bound.
 */
/**
 * A run's cost (`cost` of a terminal event, when its budget had prices) as the summary line shows it:
 * `cost 0.0123` (4 significant decimals, the price table's unit), `cost at least 0.0123` when incomplete.
 */
export function costText(cost: Cost): string {
  const amount = Number(cost.amount.toPrecision(4)).toString();
  return cost.complete ? `cost ${amount}` : `cost at least ${amount}`;
}

/**
 * A budget stop's figures (`run_completed.budget`) for the summary line: `maxTotalTokens: 1234 of 1000 used`, with
 * `(next request ~300)` when the check before a call stopped it.
 */
export function budgetText(b: BudgetFigures): string {
  const next = b.estimate === undefined ? '' : ` (next request ~${Number(b.estimate.toPrecision(4))})`;
  return `${b.limit}: ${Number(b.used.toPrecision(6))} of ${b.max} used${next}`;
}

export function usageText(usage: Usage): string {
  const counted = `${usage.inputTokens} in + ${usage.outputTokens} out = ${usage.totalTokens} tokens`;
  if (usage.reported) return `usage ${counted}`;
  if (usage.totalTokens === 0 && usage.inputTokens === 0 && usage.outputTokens === 0) return 'usage unknown';
  return `usage unknown (at least ${counted})`;
}
