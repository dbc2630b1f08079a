/**
 * Durable sessions (issue 19): what a completed run's commit costs, and what loading a long conversation costs,
 * for SqliteSessionStore (a file in the temp folder: WAL, synchronous FULL) and PostgresSessionStore (the local
 * server, libpq variables, defaults 127.0.0.1:5432 postgres/test, a schema made and dropped here).
 *
 * - commit: `append(items, { runId })` of one run's Items (6 Items, 5.2 KB of JSON: the user's input, two
 *   assistant messages with a tool call between them, the tool's result), BENCH_COMMITS runs (default 500) into
 *   one session after 50 warm-up runs; p50, p99, max per commit.
 * - load: a session of 10 000 Items (one append), loaded 7 times after one warm-up load; min, median, max.
 * - a 10 000-Item append (one run): 7 times into fresh sessions; median.
 * - journal: `journalTurn(runId, turn, items)` of one completed turn's Items (an assistant message with a tool
 *   call and the tool's result, 2 Items, 3.4 KB of JSON), BENCH_COMMITS turns (runs of 10 turns) after 50
 *   warm-up turns: the cost a durable run adds per turn (docs/sessions.md, "Durable runs").
 * - response and start: `journalResponse` of a turn's assistant Item (1 Item) and `recordCallStart(runId, callId)`,
 *   BENCH_COMMITS of each: what a durable run adds per turn with tool calls and per call ("No tool runs twice").
 * Wall-clock figures on a noisy shared machine: medians and percentiles, never asserted anywhere.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type * as Postgres from '../src/postgres/index.js';
import type * as Sqlite from '../src/sqlite/index.js';
import type { Item } from '../src/index.js';
import { loadEntry, LIB_LABEL } from './lib/loopctl.js';
import { fmt, printTable, summarize } from './lib/stats.js';

const COMMITS = Number(process.env['BENCH_COMMITS'] ?? 500);
const ROUNDS = 7;

function runItems(r: number): Item[] {
  const text = (n: number, seed: string) => `${seed} `.repeat(Math.ceil(n / (seed.length + 1))).slice(0, n);
  return [
    { type: 'user', id: `u${r}`, text: text(200, 'please look at the failing build') },
    {
      type: 'assistant',
      id: `a${r}`,
      text: text(300, 'let me read the log'),
      toolCalls: [{ callId: `c${r}`, name: 'read_file', arguments: '{"path":"build.log"}' }],
    },
    { type: 'tool_result', callId: `c${r}`, output: text(3000, 'error TS2345 at src/x.ts:12'), isError: false },
    { type: 'assistant', id: `b${r}`, text: text(1200, 'the build fails because'), toolCalls: [] },
    { type: 'user', id: `s${r}`, text: text(100, 'also check the tests') },
    { type: 'assistant', id: `d${r}`, text: text(300, 'the tests pass'), toolCalls: [] },
  ];
}

const bigHistory = (tag: string): Item[] =>
  Array.from({ length: 10_000 }, (_, i) => ({ type: 'user', id: `${tag}-${i}`, text: `message ${i} `.repeat(20) }));

type Store = Sqlite.SqliteSessionStore | Postgres.PostgresSessionStore;

async function measure(label: string, store: Store): Promise<string[][]> {
  const s = store.session('bench-commits');
  for (let r = 0; r < 50; r++) await s.append(runItems(r), { runId: `warm-${r}` });
  const commits: number[] = [];
  for (let r = 0; r < COMMITS; r++) {
    const items = runItems(r);
    const t = performance.now();
    await s.append(items, { runId: `run-${r}` });
    commits.push(performance.now() - t);
  }
  const c = summarize(commits);
  const big = store.session('bench-load');
  await big.append(bigHistory('load'), { runId: 'load' });
  await big.load();
  const loads: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const t = performance.now();
    const items = await big.load();
    loads.push(performance.now() - t);
    if (items.length !== 10_000) throw new Error(`${label}: loaded ${items.length} items, not 10 000`);
  }
  const appends: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const history = bigHistory(`append${i}`);
    const t = performance.now();
    await store.session(`bench-append-${i}`).append(history, { runId: 'one' });
    appends.push(performance.now() - t);
  }
  const journal = store.session('bench-journal');
  for (let r = 0; r < 50; r++) await journal.journalTurn('warm', r + 1, runItems(r).slice(1, 3));
  const turns: number[] = [];
  for (let r = 0; r < COMMITS; r++) {
    const items = runItems(r).slice(1, 3);
    const t = performance.now();
    await journal.journalTurn(`journal-${Math.floor(r / 10)}`, (r % 10) + 1, items);
    turns.push(performance.now() - t);
  }
  // No tool runs twice (docs/sessions.md): a turn's response before its tools, and each call's start.
  const responses: number[] = [];
  const starts: number[] = [];
  for (let r = 0; r < COMMITS; r++) {
    const response = runItems(r).slice(1, 2);
    let t = performance.now();
    await journal.journalResponse(`response-${Math.floor(r / 10)}`, (r % 10) + 1, response);
    responses.push(performance.now() - t);
    t = performance.now();
    await journal.recordCallStart(`response-${Math.floor(r / 10)}`, `c${r}`);
    starts.push(performance.now() - t);
  }
  const rs = summarize(responses);
  const st = summarize(starts);
  const j = summarize(turns);
  const l = summarize(loads);
  const a = summarize(appends);
  return [
    [
      `${label}: commit of one run (6 Items, 5.2 KB)`,
      fmt(c.p50, 2),
      fmt(c.p99, 2),
      fmt(c.min, 2),
      fmt(c.max, 2),
    ].concat(`${c.n}`),
    [
      `${label}: journal write of one turn (2 Items, 3.4 KB)`,
      fmt(j.p50, 2),
      fmt(j.p99, 2),
      fmt(j.min, 2),
      fmt(j.max, 2),
      `${j.n}`,
    ],
    [
      `${label}: journal write of a turn's response (1 Item, 0.4 KB)`,
      fmt(rs.p50, 2),
      fmt(rs.p99, 2),
      fmt(rs.min, 2),
      fmt(rs.max, 2),
      `${rs.n}`,
    ],
    [`${label}: record of a call's start`, fmt(st.p50, 2), fmt(st.p99, 2), fmt(st.min, 2), fmt(st.max, 2), `${st.n}`],
    [`${label}: load of 10 000 Items`, fmt(l.p50, 1), '-', fmt(l.min, 1), fmt(l.max, 1), `${l.n}`],
    [`${label}: append of 10 000 Items in one run`, fmt(a.p50, 1), '-', fmt(a.min, 1), fmt(a.max, 1), `${a.n}`],
  ];
}

console.log(`library: ${LIB_LABEL}; ${COMMITS} commits per store`);
const rows: string[][] = [['store and operation (ms)', 'median', 'p99', 'min', 'max', 'samples']];
let failed = false;

const { SqliteSessionStore } = (await loadEntry('sqlite/index')) as typeof Sqlite;
const dir = mkdtempSync(path.join(tmpdir(), 'loopctl-bench-sessions-'));
try {
  const store = new SqliteSessionStore(path.join(dir, 'sessions.db'));
  rows.push(...(await measure('SQLite', store)));
  await store.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const { PostgresSessionStore, createSchema } = (await loadEntry('postgres/index')) as typeof Postgres;
process.env['PGHOST'] ??= '127.0.0.1';
process.env['PGPORT'] ??= '5432';
process.env['PGUSER'] ??= 'postgres';
process.env['PGDATABASE'] ??= 'test';
const pool = new pg.Pool({ max: 4 });
const schema = `loopctl_bench_${process.pid}`;
try {
  await createSchema(pool, { schema });
  const store = new PostgresSessionStore(pool, { schema });
  rows.push(...(await measure('Postgres', store)));
} catch (err) {
  console.error(`Postgres: ${(err as Error).message}`);
  failed = true;
} finally {
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
  await pool.end();
}

printTable('Durable sessions (wall-clock ms)', rows);
process.exit(failed ? 1 : 0);
