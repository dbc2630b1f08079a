/**
 * `loopctl --otel` (docs/telemetry.md, "The CLI"): the built bin exports the run's spans with the
 * official OTLP/HTTP exporter to OTEL_EXPORTER_OTLP_ENDPOINT, here a receiver on 127.0.0.1 that
 * decodes what it gets by its content type; without the SDK installed, exit 2 naming the
 * `npm install` command. With no collector the command ends with one warning line after a bounded
 * flush (the bound itself is pinned in virtual time); `OTEL_TRACES_EXPORTER=console` prints each
 * span as a line on stderr and sends nothing.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { main } from '../src/cli/app.js';
import { OTEL_PACKAGES } from '../src/cli/otel.js';
import {
  bounded,
  ExportAccount,
  FLUSH_BOUND_MS,
  flushBoundMs,
  tracesEndpoint,
  tracesExporters,
} from '../src/cli/otel-export.js';
import { cliEnv, ensureBuilt, runBin } from './cli-helpers.js';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: Record<string, unknown> }[];
}
interface OtlpRequest {
  resourceSpans: {
    resource: { attributes: OtlpSpan['attributes'] };
    scopeSpans: { scope: { name: string }; spans: OtlpSpan[] }[];
  }[];
}

/** An OTLP/HTTP receiver: each request's body decoded by its Content-Type (and Content-Encoding). */
async function receiver() {
  const received: { path: string; type: string; body: OtlpRequest }[] = [];
  const read = async (req: IncomingMessage): Promise<Buffer> => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    return req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw;
  };
  const server = createServer((req, res) => {
    void read(req).then((bytes) => {
      const type = String(req.headers['content-type']);
      // The OTLP/HTTP exporter of this package speaks JSON; protobuf would need the proto exporter.
      if (!type.startsWith('application/json')) throw new Error(`undecodable OTLP content type ${type}`);
      received.push({ path: req.url ?? '', type, body: JSON.parse(bytes.toString('utf8')) as OtlpRequest });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, received, close: () => new Promise<void>((r) => server.close(() => r())) };
}

const value = (v: Record<string, unknown>) => v['stringValue'] ?? v['intValue'] ?? v['boolValue'];
const attrs = (list: OtlpSpan['attributes']) => Object.fromEntries(list.map((a) => [a.key, value(a.value)]));

let dir: string;
beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'loopctl-otel-'));
  writeFileSync(path.join(dir, 'a.md'), '# a\n');
  writeFileSync(path.join(dir, 'b.md'), '# b\n');
  await ensureBuilt();
}, 180_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('loopctl --otel', () => {
  it('exports the run as OTLP/HTTP JSON to OTEL_EXPORTER_OTLP_ENDPOINT: one trace, the run span its root', async () => {
    const rx = await receiver();
    try {
      const otelEnv = { OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=test' };
      const env = cliEnv(otelEnv);
      const { code, stdout } = await runBin(['--otel', 'list the .md files'], dir, env).done;
      expect(code).toBe(0);
      expect(stdout).toContain('a.md');
      expect(rx.received.map((r) => [r.path, r.type])).toEqual([['/v1/traces', 'application/json']]);
      const [resourceSpans] = rx.received[0]!.body.resourceSpans;
      expect(attrs(resourceSpans!.resource.attributes)).toMatchObject({
        'service.name': 'loopctl',
        'deployment.environment': 'test',
        'telemetry.sdk.language': 'nodejs',
      });
      const spans = resourceSpans!.scopeSpans.flatMap((s) => s.spans);
      expect(resourceSpans!.scopeSpans.map((s) => s.scope.name)).toEqual(['loopctl']);
      const root = spans.find((s) => s.name === 'invoke_agent loopctl')!;
      expect(root.parentSpanId ?? '').toBe('');
      expect(attrs(root.attributes)).toMatchObject({
        'gen_ai.operation.name': 'invoke_agent',
        'gen_ai.agent.name': 'loopctl',
        'loopctl.stop_reason': 'completed',
      });
      expect(new Set(spans.map((s) => s.traceId))).toEqual(new Set([root.traceId]));
      const children = spans.filter((s) => s !== root);
      expect(children.length).toBeGreaterThanOrEqual(3); // a chat, a tool, the answering chat
      for (const s of children) expect(s.parentSpanId).toBe(root.spanId);
      expect(children.filter((s) => s.name.startsWith('chat ')).length).toBeGreaterThanOrEqual(2);
      expect(children.some((s) => s.name.startsWith('execute_tool '))).toBe(true);
    } finally {
      await rx.close();
    }
  }, 60_000);

  it('with nothing listening at the endpoint: exit 0, the answer, and one warning line naming the endpoint', async () => {
    // A port that was just free: nothing listens on it.
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const env = cliEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}` });
    const { code, stdout, stderr } = await runBin(['--otel', '--no-save', 'list the .md files'], dir, env).done;
    expect(code).toBe(0);
    expect(stdout).toContain('a.md');
    const warnings = stderr.split('\n').filter((line) => line.startsWith('loopctl: --otel:'));
    expect(warnings).toEqual([
      expect.stringMatching(
        new RegExp(
          `^loopctl: --otel: the collector at http://127\\.0\\.0\\.1:${port}/v1/traces (did not answer within 0\\.5 s|did not take the spans \\(.*\\)); \\d+ spans not exported \\(set OTEL_EXPORTER_OTLP_ENDPOINT, or OTEL_TRACES_EXPORTER=console to print spans here\\)$`,
        ),
      ),
    ]);
  }, 60_000);

  it('OTEL_TRACES_EXPORTER=console: each span is one line on stderr, parented to the run span; nothing is sent', async () => {
    const rx = await receiver();
    try {
      const env = cliEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_TRACES_EXPORTER: 'console' });
      const { code, stdout, stderr } = await runBin(['--otel', '--no-save', 'list the .md files'], dir, env).done;
      expect(code).toBe(0);
      expect(stdout).toContain('a.md');
      expect(rx.received).toEqual([]);
      expect(stderr).not.toMatch(/loopctl: --otel/);
      const spans = stderr.split('\n').filter((line) => line.startsWith('[span] '));
      const line = /^\[span\] (.+?) · \d+ ms · ok · trace ([0-9a-f]{32}) span ([0-9a-f]{16}) parent ([0-9a-f]{16}|-)/;
      const parsed = spans
        .map((s) => line.exec(s)!)
        .map(([, name, trace, span, parent]) => ({ name, trace, span, parent }));
      const root = parsed.find((s) => s.name === 'invoke_agent loopctl')!;
      expect(root.parent).toBe('-');
      expect(spans.find((s) => s.includes('invoke_agent'))).toContain('loopctl.stop_reason=completed');
      const children = parsed.filter((s) => s !== root);
      expect(children.map((s) => s.name)).toEqual([
        'chat loopctl-offline',
        'execute_tool list_dir',
        'chat loopctl-offline',
      ]);
      for (const s of children) expect([s.trace, s.parent]).toEqual([root.trace, root.span]);
    } finally {
      await rx.close();
    }
  }, 60_000);

  it('OTEL_TRACES_EXPORTER with an unknown exporter: exit 2 naming the variable', async () => {
    const out = { text: '', isTTY: false, write: (t: string) => void (out.text += t) };
    const err = { text: '', isTTY: false, write: (t: string) => void (err.text += t) };
    const exit = (code: number): never => {
      throw new Error(`exit ${code}`);
    };
    const env = { OTEL_TRACES_EXPORTER: 'zipkin' };
    const code = await main(['--otel', '--cwd', dir, 'list the .md files'], env, { stdout: out, stderr: err, exit });
    expect(code).toBe(2);
    expect(err.text).toBe(
      'loopctl: OTEL_TRACES_EXPORTER must be otlp, console or none, or a comma-separated list of them ' +
        `(got "zipkin")\nTry 'loopctl --help'.\n`,
    );
  });

  it('an OTLP endpoint variable that is not an http(s) URL: exit 2 naming the variable, nothing run', async () => {
    const cases: [Record<string, string>, string][] = [
      [
        { OTEL_EXPORTER_OTLP_ENDPOINT: 'notaurl' },
        'OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s) URL (got "notaurl")',
      ],
      [
        { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'collector:4318' },
        'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must be an http(s) URL (got "collector:4318")',
      ],
    ];
    for (const [env, line] of cases) {
      const out = { text: '', isTTY: false, write: (t: string) => void (out.text += t) };
      const err = { text: '', isTTY: false, write: (t: string) => void (err.text += t) };
      const exit = (code: number): never => {
        throw new Error(`exit ${code}`);
      };
      const code = await main(['--otel', '--cwd', dir, 'list the .md files'], env, { stdout: out, stderr: err, exit });
      console.log(`${JSON.stringify(env)}: exit ${code}, ${err.text.split('\n')[0]}`);
      expect(code).toBe(2);
      expect(err.text).toBe(`loopctl: ${line}\nTry 'loopctl --help'.\n`);
      expect(out.text).toBe('');
    }
  });

  it('the OTLP endpoint is not checked when nothing is sent to it (OTEL_TRACES_EXPORTER=console)', async () => {
    const out = { text: '', isTTY: false, write: (t: string) => void (out.text += t) };
    const err = { text: '', isTTY: false, write: (t: string) => void (err.text += t) };
    const exit = (code: number): never => {
      throw new Error(`exit ${code}`);
    };
    const env = {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'notaurl',
      OTEL_TRACES_EXPORTER: 'console',
      LOOPCTL_OFFLINE_DELAY_MS: '0',
    };
    const argv = ['--otel', '--no-save', '--cwd', dir, 'list the .md files'];
    expect(await main(argv, env, { stdout: out, stderr: err, exit })).toBe(0);
    expect(err.text).toContain('[span] invoke_agent loopctl');
  });

  it('without the SDK installed: exit 2, naming the npm install command', async () => {
    const out = { text: '', isTTY: false, write: (t: string) => void (out.text += t) };
    const err = { text: '', isTTY: false, write: (t: string) => void (err.text += t) };
    const loaded: string[] = [];
    const loadModule = async (specifier: string) => {
      loaded.push(specifier);
      throw Object.assign(new Error(`Cannot find package '${specifier}'`), { code: 'ERR_MODULE_NOT_FOUND' });
    };
    const exit = (code: number): never => {
      throw new Error(`exit ${code}`);
    };
    const io = { stdout: out, stderr: err, exit, loadModule };
    const code = await main(['--otel', '--cwd', dir, 'list the .md files'], {}, io);
    expect(code).toBe(2);
    expect(loaded).toContain('@opentelemetry/sdk-trace-base');
    expect(err.text).toBe(
      'loopctl: --otel needs the OpenTelemetry SDK and its OTLP exporter, which are not installed; install them ' +
        `with: npm install ${OTEL_PACKAGES.join(' ')}\nTry 'loopctl --help'.\n`,
    );
    expect(out.text).toBe('');
  });

  it('without --otel nothing of OpenTelemetry is loaded', async () => {
    const out = { text: '', isTTY: false, write: (t: string) => void (out.text += t) };
    const err = { text: '', isTTY: false, write: (t: string) => void (err.text += t) };
    const loaded: string[] = [];
    const loadModule = async (specifier: string) => void loaded.push(specifier);
    const exit = (c: number): never => {
      throw new Error(`exit ${c}`);
    };
    const io = { stdout: out, stderr: err, exit, loadModule };
    const code = await main(['--cwd', dir, 'list the .md files'], { LOOPCTL_OFFLINE_DELAY_MS: '0' }, io);
    expect(code).toBe(0);
    expect(loaded).toEqual([]);
  });
});

describe('the export of --otel, in-process', () => {
  it('the flush at exit waits at most its bound, then warns once; a flush that ends first does not warn', async () => {
    vi.useFakeTimers();
    try {
      const late: string[] = [];
      let settled = false;
      const never = new Promise<void>(() => undefined);
      const waiting = bounded(never, FLUSH_BOUND_MS, () => late.push('late')).then(() => (settled = true));
      await vi.advanceTimersByTimeAsync(FLUSH_BOUND_MS - 1);
      expect([settled, late]).toEqual([false, []]);
      await vi.advanceTimersByTimeAsync(1);
      await waiting;
      expect([settled, late]).toEqual([true, ['late']]);
      await bounded(Promise.resolve(), FLUSH_BOUND_MS, () => late.push('late again'));
      await bounded(Promise.reject(new Error('export failed')), FLUSH_BOUND_MS, () => late.push('late again'));
      expect(late).toEqual(['late']);
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('a failed export warns once, counting the spans the collector did not take', () => {
    const err = { text: '', write: (t: string) => void (err.text += t) };
    const account = new ExportAccount('http://127.0.0.1:9/v1/traces', err);
    const results = [{ code: 0 }, { code: 1, error: new Error('connect ECONNREFUSED') }, { code: 1 }];
    const exporter = account.watch({
      export: (_spans, done) => done(results.shift() as never),
      shutdown: async () => undefined,
    });
    account.ended = 5;
    const answered: number[] = [];
    for (const spans of [[{}, {}], [{}], [{}, {}]]) exporter.export(spans as never, (r) => answered.push(r.code));
    expect(answered).toEqual([0, 1, 1]);
    expect(err.text).toBe(
      'loopctl: --otel: the collector at http://127.0.0.1:9/v1/traces did not take the spans (connect ECONNREFUSED); ' +
        '3 spans not exported (set OTEL_EXPORTER_OTLP_ENDPOINT, or OTEL_TRACES_EXPORTER=console to print spans here)\n',
    );
  });

  it('reads OTEL_TRACES_EXPORTER, the OTLP timeout variables and the endpoint as the SDK does', () => {
    expect([...tracesExporters({})]).toEqual(['otlp']);
    expect([...tracesExporters({ OTEL_TRACES_EXPORTER: ' Console , otlp' })]).toEqual(['console', 'otlp']);
    expect([...tracesExporters({ OTEL_TRACES_EXPORTER: 'none' })]).toEqual([]);
    expect(() => tracesExporters({ OTEL_TRACES_EXPORTER: 'jaeger' })).toThrow(/OTEL_TRACES_EXPORTER/);
    expect(flushBoundMs({})).toBe(FLUSH_BOUND_MS);
    expect(flushBoundMs({ OTEL_EXPORTER_OTLP_TIMEOUT: '2000' })).toBe(2000);
    expect(flushBoundMs({ OTEL_EXPORTER_OTLP_TIMEOUT: '2000', OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: '300' })).toBe(300);
    expect(flushBoundMs({ OTEL_EXPORTER_OTLP_TIMEOUT: 'soon' })).toBe(FLUSH_BOUND_MS);
    expect(tracesEndpoint({})).toBe('http://localhost:4318/v1/traces');
    expect(tracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/' })).toBe('http://c:4318/v1/traces');
    expect(tracesEndpoint({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://t/x' })).toBe('http://t/x');
  });
});
