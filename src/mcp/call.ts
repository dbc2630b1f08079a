import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { Observable } from 'rxjs';
import { ToolExecutionError, describeReason } from '../errors.js';
import { mcpWrapOf } from '../tools/call-wrap.js';
import type { ToolContext } from '../tools/tool.js';
import { resultText } from './content.js';

/** Per-call options of {@link mcpCall$}; times in ms. */
export interface McpCallOptions {
  /**
   * The SDK's per-request timeout in ms (the SDK's default, 60 000, when absent). On expiry the SDK sends
   * `notifications/cancelled` and the model gets a tool error.
   */
  readonly timeoutMs?: number;
  /** Restart the timeout on each progress notification. Default false. */
  readonly resetTimeoutOnProgress?: boolean;
  /** A ceiling in ms that progress cannot extend. Default none. */
  readonly maxTotalTimeoutMs?: number;
}

/** What an MCP call is given: the loopctl tool name (for errors) and the server's own tool name. */
export interface McpCallTarget {
  readonly toolName: string;
  readonly mcpName: string;
}

/** True for errors raised before or while sending, which leave the SDK's response handler behind (docs/recovery.md). */
function isSendFailure(err: unknown): boolean {
  return (
    !(err instanceof McpError) &&
    !(err !== null && typeof err === 'object' && Array.isArray((err as { issues?: unknown }).issues))
  );
}

/**
 * One `tools/call` as a cold Observable of the result text (checkpoint 8:
 * tool call; guarantee 10: in-flight requests aborted). Each subscription runs on its OWN AbortController,
 * linked to `ctx.signal` only while the call is in flight (the SDK never
 * removes the abort listener it adds, so it never sees a long-lived signal).
 * Unsubscribing or `ctx.signal` aborting mid-call aborts that controller: the
 * SDK drops its handlers and timer and sends `notifications/cancelled` with
 * the request id, synchronously. Progress notifications go to
 * `ctx.reportProgress`. Emits the text and completes; errors with a
 * `ToolExecutionError` carrying the server's text for `isError` results,
 * server errors, timeouts and a closed connection (fails fast once closed).
 */
export function mcpCall$(
  client: Client,
  target: McpCallTarget,
  args: Record<string, unknown>,
  ctx: ToolContext,
  options: McpCallOptions = {},
): Observable<string> {
  const { toolName, mcpName } = target;
  const fail = (message: string, cause?: unknown): ToolExecutionError =>
    new ToolExecutionError(toolName, ctx.callId, message, { cause });
  return new Observable<string>((subscriber) => {
    if (client.transport === undefined) {
      subscriber.error(fail(`MCP server is not connected (its transport is closed); "${mcpName}" cannot be called`));
      return;
    }
    if (ctx.signal.aborted) {
      subscriber.error(
        fail(`the call to "${mcpName}" was aborted before it started: ${describeReason(ctx.signal.reason)}`),
      );
      return;
    }
    const controller = new AbortController();
    let settled = false;
    // the SDK sends notifications/cancelled
    const onAbort = (): void => controller.abort(`cancelled: ${describeReason(ctx.signal.reason)}`);
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    const settle = (): boolean => {
      if (settled) return false;
      settled = true;
      ctx.signal.removeEventListener('abort', onAbort);
      return true;
    };
    const send = () =>
      client.callTool({ name: mcpName, arguments: args }, undefined, {
        signal: controller.signal,
        onprogress: (progress) => {
          if (!settled) ctx.reportProgress(progress);
        },
        ...(options.timeoutMs !== undefined ? { timeout: options.timeoutMs } : {}),
        ...(options.resetTimeoutOnProgress !== undefined
          ? { resetTimeoutOnProgress: options.resetTimeoutOnProgress }
          : {}),
        ...(options.maxTotalTimeoutMs !== undefined ? { maxTotalTimeout: options.maxTotalTimeoutMs } : {}),
      });
    // The run's telemetry (if any) sends the request inside its span.
    const wrap = mcpWrapOf(ctx);
    const request = { method: 'tools/call', tool: mcpName, callId: ctx.callId, signal: controller.signal };
    (wrap !== undefined ? wrap(request, send) : send()).then(
      (result) => {
        if (!settle()) return;
        const text = resultText(result as Parameters<typeof resultText>[0]);
        if (result.isError === true) subscriber.error(fail(text || `the MCP tool "${mcpName}" reported an error`));
        else {
          subscriber.next(text);
          subscriber.complete();
        }
      },
      (err: unknown) => {
        if (!settle()) return;
        if (controller.signal.aborted)
          return subscriber.error(
            fail(`the MCP call to "${mcpName}" was ${describeReason(controller.signal.reason)}`, err),
          );
        // A failed send leaves the SDK's response and progress handlers behind: its own cancel path drops them.
        if (isSendFailure(err) && client.transport !== undefined)
          controller.abort(`send failed: ${describeReason(err)}`);
        subscriber.error(fail(errorMessage(err, mcpName, options), err));
      },
    );
    return () => {
      // Torn down mid-call (cancel, timeout, unsubscribe): the SDK sends notifications/cancelled.
      if (!settle()) return;
      controller.abort(
        ctx.cancel.isCancelled
          ? `cancelled: ${describeReason(ctx.cancel.reason)}`
          : 'abandoned: the tool call was torn down (e.g. its deadline expired)',
      );
    };
  });
}

function errorMessage(err: unknown, mcpName: string, options: McpCallOptions): string {
  if (err instanceof McpError) {
    if (err.code === ErrorCode.ConnectionClosed)
      return `the MCP server closed the connection during the call to "${mcpName}"`;
    if (err.code === ErrorCode.RequestTimeout) {
      const after = options.timeoutMs !== undefined ? ` after ${options.timeoutMs} ms` : '';
      return `the MCP call to "${mcpName}" timed out${after} (${err.message})`;
    }
    return `the MCP server failed the call to "${mcpName}": ${err.message.replace(/^(MCP error -?\d+: )\1+/, '$1')}`;
  }
  return `the MCP call to "${mcpName}" failed: ${describeReason(err)}`;
}
