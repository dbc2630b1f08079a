/**
 * `loopctl --otel` (docs/telemetry.md, "The CLI"): the built bin exports the run's spans with the
 * official OTLP/HTTP exporter to OTEL_EXPORTER_OTLP_ENDPOINT, here a receiver on 127.0.0.1 that
 * decodes what it gets by its content type; without the SDK installed, exit 2 naming the
 * `npm install` command.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../src/cli/app.js';
import { OTEL_PACKAGES } from '../src/cli/otel.js';
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
