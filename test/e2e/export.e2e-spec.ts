import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { parse } from 'csv-parse/sync';
import { createHash } from 'node:crypto';
import http from 'node:http';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { EXPORT_LINK_TTL_MS, ExportLinkStore } from '../../src/exports/export-link';
import { ExportsRepository } from '../../src/exports/exports.repository';
import { ExportsService } from '../../src/exports/exports.service';
import { FormRecord, FormsService } from '../../src/forms/forms.service';
import { LONG_READ_RETRY_AFTER_S, LongReads } from '../../src/responses/long-reads';
import { MAX_FILTER_BYTES, MAX_FILTER_LEAVES } from '../../src/responses/response-filter';
import { responseViewer, ResponsesService } from '../../src/responses/responses.service';
import type { ResponseRow } from '../../src/responses/responses.repository';
import { csvLayout } from '../../src/exports/csv';
import { TokensService } from '../../src/tokens/tokens.service';
import { WorkspacesService } from '../../src/workspaces/workspaces.service';
import { createOAuthAccessToken, createToken, createWorkspace, TestWorkspace } from '../factories';
import { createApp } from '../../src/app';
import { createLog } from '../../src/common/logging';
import { loadConfig } from '../../src/config/config';
import { testDatabaseUrl } from '../utils/create-test-app';
import { callTool, expectError } from '../utils/http';

const PUBLIC_URL = 'http://formwork.test';

type View = { id: string; submittedAt: string; answers: Record<string, unknown>; hidden?: Record<string, string> };

describe('export_responses', () => {
  let app: NestFastifyApplication;
  let ws: TestWorkspace;
  let token: string;
  let form: FormRecord;
  /** ExportsService's batch ranges as deployed, put back after a test that sets them lower. */
  let BATCHES: ExportsService['batchSeqRange'];
  /** Every line the service logs during these tests (debug and up), and every link it handed out. */
  const logLines: string[] = [];
  const links: string[] = [];

  /** The path of a link (its origin is PUBLIC_URL, which the test app does not listen on). */
  const pathOf = (url: string) => {
    expect(url.startsWith(`${PUBLIC_URL}/api/v1/exports/download?token=`)).toBe(true);
    return url.slice(PUBLIC_URL.length);
  };
  /** A link, as export_responses gives it. */
  const exportLink = async (args: Record<string, unknown>, bearer = token) => {
    const res = await callTool(app, bearer, 'export_responses', args);
    expect(res.status).toBe(200);
    links.push(new URL(res.body.url).searchParams.get('token')!);
    return res.body as { url: string; expiresAt: string; format: string };
  };
  /** GET a link with no credential, the body as raw bytes. */
  const download = (url: string) =>
    request(app.getHttpServer())
      .get(pathOf(url))
      .buffer(true)
      .parse((res, done) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => done(null, Buffer.concat(chunks)));
      });
  /** Every response of a form as list_responses pages them (oldest first). */
  const listAll = async (publicId: string, extra: Record<string, unknown> = {}, bearer = token) => {
    const all: View[] = [];
    for (let offset = 0; ;) {
      const res = await callTool(app, bearer, 'list_responses', { publicId, limit: 200, offset, ...extra });
      expect(res.status).toBe(200);
      all.push(...res.body.responses);
      offset += res.body.count;
      if (offset >= res.body.total) return all;
    }
  };

  /** A form of `n` responses of 4,000 characters each (16 MB as CSV), loaded by SQL. */
  const bigForm = async (workspaceId: string, n: number) => {
    const made = await app.get(FormsService).create(workspaceId, {
      title: 'Big',
      blocks: [{ type: 'long_text', title: 'Essay', required: false }],
    });
    const stored = await app.get(FormsService).get(workspaceId, made.publicId);
    await app.get(DataSource).transaction(async (tx) => {
      await tx.query(
        `INSERT INTO responses (form_id, seq, submitted_at, answers, source)
         SELECT $1, g, timestamptz '2026-01-01' + g * interval '1 second', jsonb_build_object($3::text, repeat('x', 4000) || g), 'import'
           FROM generate_series(1, $2::int) g`,
        [stored.id, n, stored.blocks[0].id],
      );
      await tx.query(
        `UPDATE response_counters SET last_seq = $2::int, total = $2::int, last_submitted_at = timestamptz '2026-01-01' + $2::int * interval '1 second' WHERE form_id = $1`,
        [stored.id, n],
      );
    });
    return made;
  };
  /** A download that its client has started and then stopped reading: the request and the response. */
  const pausedDownload = async (url: string) => {
    const address = app.getHttpServer().address() as { port: number };
    const req = http.get({ host: '127.0.0.1', port: address.port, path: pathOf(url) });
    const res = await new Promise<http.IncomingMessage>((resolve) => req.on('response', resolve));
    expect(res.statusCode).toBe(200);
    await new Promise((resolve) => res.once('data', resolve));
    res.pause();
    return Object.assign(req, { response: res });
  };

  beforeAll(async () => {
    // The test app of createTestApp, with its log kept (debug: every line, the 4xx ones included).
    const config = loadConfig({
      NODE_ENV: 'test',
      PUBLIC_URL,
      LOG_LEVEL: 'debug',
      RATE_LIMIT_CREDENTIAL_PER_MIN: '100000',
      RATE_LIMIT_IP_PER_MIN: '100000',
      // 6: the instance then runs 4 long reads at once (the pool less 2), so workspace A's 2 leave B room.
      DATABASE_POOL_SIZE: '6',
    });
    const log = createLog({ logLevel: 'debug', production: true }, { write: (line: string) => logLines.push(line) });
    app = await createApp(config, testDatabaseUrl(), log, { oauth: false });
    await app.listen(0, '127.0.0.1');
    BATCHES = app.get(ExportsService).batchSeqRange;
    ws = await createWorkspace(app, 'free'); // reads, export included, work on every plan
    token = (await createToken(app, ws, { role: 'viewer' })).token;
    const forms = app.get(FormsService);
    const made = await forms.create(ws.id, {
      title: 'Café survey, "2026"',
      hiddenFields: ['source'],
      blocks: [
        { type: 'short_text', title: 'Name, first', ref: 'name' },
        { type: 'statement', title: 'Thanks for coming' },
        { type: 'long_text', title: 'Comment', ref: 'comment' },
        { type: 'multiple_choice', title: 'Colour', ref: 'colour', choices: ['Red, dark', 'Green "lime"', 'Blue'] },
        { type: 'checkboxes', title: 'Pets', ref: 'pets', choices: ['Cat', 'Dog', 'Ünïcorn'] },
        { type: 'number', title: 'Balance', ref: 'balance' },
        { type: 'rating', title: 'Rating', ref: 'rating', max: 5 },
        { type: 'yes_no', title: 'Subscribe?', ref: 'subscribe' },
        { type: 'date', title: 'When' },
      ],
    });
    form = await forms.get(ws.id, made.publicId);
    const id = Object.fromEntries(form.blocks.map((b) => [b.ref ?? b.title, b.id]));
    const responses = app.get(ResponsesService);
    const rows: Array<[Record<string, unknown>, Record<string, string>?]> = [
      [{ name: 'Ann, "the first"', comment: 'line one\nline two\r\nline three', colour: 'Red, dark', rating: 5 }],
      [
        { name: '=SUM(A1:A9)', comment: '+33 6 12 34 56', colour: 'Green "lime"', rating: 2, balance: -5 },
        { source: '=HYPERLINK("http://x")' },
      ],
      [{ name: '-minus', comment: '@cmd', pets: ['Cat', 'Ünïcorn'], balance: 3.25, subscribe: true, rating: 1 }],
      [
        { name: '\tTabbed', comment: '\rreturn', pets: ['Dog'], subscribe: false, [id['When']]: '2026-02-28' },
        { source: '\tTab =1+1' },
      ],
      [{ name: 'Zoë 日本語 😀', comment: 'naïve — “quoted”', colour: 'Blue', rating: 4 }, { source: 'newsletter' }],
      [{}],
    ];
    let t = Date.UTC(2026, 0, 1);
    for (const [answers, hidden] of rows) {
      const byId = Object.fromEntries(Object.entries(answers).map(([k, v]) => [id[k] ?? k, v]));
      await responses.create(form, byId, { source: 'import', submittedAt: new Date((t += 60_000)), hidden });
    }
  });
  afterAll(() => app.close());

  describe('CSV', () => {
    it('reads back in a CSV parser as list_responses shows the responses: quoting, formulas, non-ASCII, one row each in order', async () => {
      const link = await exportLink({ publicId: form.publicId, format: 'csv' });
      expect(link.format).toBe('csv');
      expect(Date.parse(link.expiresAt) - Date.now()).toBeGreaterThan(EXPORT_LINK_TTL_MS - 60_000);
      expect(Date.parse(link.expiresAt) - Date.now()).toBeLessThanOrEqual(EXPORT_LINK_TTL_MS);

      const res = await download(link.url);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('text/csv; charset=utf-8; header=present');
      expect(res.headers['cache-control']).toBe('private, no-store');
      expect(res.headers['content-disposition']).toBe(
        // Quotes are no characters of a file name (Windows): left out of both names.
        `attachment; filename="Cafe survey, 2026.csv"; filename*=UTF-8''Caf%C3%A9%20survey%2C%202026.csv`,
      );
      const bytes = res.body as Buffer;
      expect([...bytes.subarray(0, 3)]).toEqual([0xef, 0xbb, 0xbf]); // UTF-8 byte order mark
      expect(bytes.toString('utf8')).toContain('\r\n'); // RFC 4180 line ends

      const records: string[][] = parse(bytes, { bom: true, relax_column_count: false });
      const [header, ...rows] = records;
      expect(header).toEqual([
        'id',
        'submittedAt',
        'Name, first',
        'Comment',
        'Colour',
        'Pets',
        'Balance',
        'Rating',
        'Subscribe?',
        'When',
        'source',
      ]);
      const listed = await listAll(form.publicId);
      expect(rows.map((r) => r[0])).toEqual(listed.map((r) => r.id));
      // Each cell as a spreadsheet should show the listed value.
      const blocks = form.blocks.filter((b) => b.type !== 'statement');
      const cell = (v: unknown): string => {
        if (v === undefined) return '';
        if (typeof v === 'number') return String(v);
        if (typeof v === 'boolean') return v ? 'Yes' : 'No';
        const text = Array.isArray(v) ? v.join('; ') : String(v);
        return /^[=+\-@\t\r]/.test(text) ? `'${text}` : text;
      };
      for (const [i, row] of rows.entries()) {
        const r = listed[i];
        expect(row).toEqual([r.id, r.submittedAt, ...blocks.map((b) => cell(r.answers[b.id])), cell(r.hidden?.source)]);
        expect(row[1]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/); // RFC 3339, UTC
      }
      // Spelled out: what a person opening the file sees.
      const col = (title: string) => header.indexOf(title);
      expect(rows[0][col('Name, first')]).toBe('Ann, "the first"');
      expect(rows[0][col('Comment')]).toBe('line one\nline two\r\nline three');
      expect(rows[0][col('Colour')]).toBe('Red, dark');
      expect(rows[1][col('Name, first')]).toBe("'=SUM(A1:A9)");
      expect(rows[1][col('Comment')]).toBe("'+33 6 12 34 56");
      expect(rows[1][col('Balance')]).toBe('-5'); // numbers stay numbers
      expect(rows[1][col('source')]).toBe(`'=HYPERLINK("http://x")`);
      expect(rows[2][col('Name, first')]).toBe("'-minus");
      expect(rows[2][col('Comment')]).toBe("'@cmd");
      expect(rows[2][col('Pets')]).toBe('Cat; Ünïcorn');
      expect(rows[2][col('Subscribe?')]).toBe('Yes'); // as the pages say
      expect(rows[3][col('Subscribe?')]).toBe('No');
      // Text answers are stored trimmed: a leading tab or CR survives only inside a hidden value.
      expect(rows[3][col('source')]).toBe("'\tTab =1+1");
      expect(rows[3][col('When')]).toBe('2026-02-28');
      expect(rows[4][col('Name, first')]).toBe('Zoë 日本語 😀');
      expect(rows[5].slice(2)).toEqual(Array(9).fill(''));
    });

    it('writes in PostgreSQL exactly the records csvLayout writes, for random answers of every kind', async () => {
      // The records of a CSV download are built in SQL (csv-sql.ts); csvLayout().record() is the
      // reference. Random values aimed at the rules: quotes, commas, CR/LF, formula starts, empty
      // text, non-ASCII, negative and fractional numbers, unknown choices, checkboxes in any order.
      const made = await app.get(FormsService).create(ws.id, {
        title: 'Random',
        hiddenFields: ['utm', 'ref'],
        blocks: [
          { type: 'short_text', title: 'Text' },
          { type: 'long_text', title: 'Long' },
          { type: 'multiple_choice', title: 'One', choices: ['=A', 'B, "b"', 'C\nc', '-1'] },
          { type: 'dropdown', title: 'Drop', choices: ['x', '@y'] },
          { type: 'checkboxes', title: 'Many', choices: ['+p', 'q"', 'r,s', 'ü'] },
          { type: 'number', title: 'Number' },
          { type: 'rating', title: 'Rating', max: 10 },
          { type: 'yes_no', title: 'Yes?' },
          { type: 'date', title: 'Date' },
          { type: 'email', title: 'Email' },
          { type: 'statement', title: 'No answer' },
        ],
      });
      const stored = await app.get(FormsService).get(ws.id, made.publicId);
      let seed = 20261126; // mulberry32: an LCG's low bits repeat too soon for `% n`
      const rand = (n: number) => {
        seed = (seed + 0x6d2b79f5) | 0;
        let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
        t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
        return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
      };
      const pick = <T>(xs: T[]) => xs[rand(xs.length)];
      const pieces = [
        'a',
        'Zoë',
        '日本',
        '😀',
        ',',
        '"',
        '""',
        '\r',
        '\n',
        '\r\n',
        '=',
        '+',
        '-',
        '@',
        '\t',
        ' ',
        ';',
        "'",
      ];
      const text = () => Array.from({ length: rand(6) }, () => pick(pieces)).join('');
      const rows: Array<[Record<string, unknown>, Record<string, string>]> = [];
      for (let i = 0; i < 300; i++) {
        const answers: Record<string, unknown> = {};
        for (const b of stored.blocks) {
          if (rand(5) === 0) continue; // left blank
          const ids = (b.choices ?? []).map((c) => c.id);
          const value = {
            short_text: text,
            long_text: text,
            email: text,
            multiple_choice: () => (rand(6) === 0 ? 'gone' : pick(ids)),
            dropdown: () => pick(ids),
            checkboxes: () => Array.from({ length: rand(4) }, () => (rand(8) === 0 ? 'gone' : pick(ids))),
            number: () => pick([0, -5, 3.25, 1e6, -0.125, 42, 123456789.5, 0.1 + 0.2]),
            rating: () => 1 + rand(10),
            yes_no: () => rand(2) === 0,
            date: () => pick(['2026-02-28', '1999-12-31']),
          }[b.type as string];
          if (value) answers[b.id] = value();
        }
        const hidden: Record<string, string> = {};
        if (rand(2)) hidden.utm = text();
        if (rand(2)) hidden.ref = text();
        rows.push([answers, hidden]);
      }
      const db = app.get(DataSource);
      // Every third began as a partial (issue 45: startedAt in the CSV of status "all").
      await db.query(
        `INSERT INTO responses (form_id, seq, submitted_at, started_at, answers, hidden, source)
       SELECT $1, o, timestamptz '2026-03-01' + o * interval '1.0375 second',
              CASE WHEN o % 3 = 0 THEN timestamptz '2026-02-01' + o * interval '1.5 second' END,
              (x ->> 0)::jsonb, (x ->> 1)::jsonb, 'import'
         FROM jsonb_array_elements($2::jsonb) WITH ORDINALITY AS t(x, o)`,
        [stored.id, JSON.stringify(rows.map(([a, h]) => [JSON.stringify(a), JSON.stringify(h)]))],
      );
      await db.query(`UPDATE response_counters SET last_seq = $2::int, total = $2::int WHERE form_id = $1`, [
        stored.id,
        rows.length,
      ]);
      const exports = app.get(ExportsService);
      exports.batchSeqRange = { csv: 64, ndjson: 64 }; // several batches, one of them partial
      try {
        for (const [answersBy, status] of [
          ['id', undefined],
          ['ref', undefined],
          ['id', 'all'],
        ] as const) {
          const res = await download((await exportLink({ publicId: made.publicId, answersBy, status })).url);
          const got = (res.body as Buffer).toString('utf8');
          const layout = csvLayout(stored, answersBy, { status: status !== undefined });
          const view = responseViewer(stored, 'id');
          const read = await db.query(
            `SELECT id, submitted_at AS "submittedAt", started_at AS "startedAt", answers, hidden
               FROM responses WHERE form_id = $1 ORDER BY seq`,
            [stored.id],
          );
          const want = layout.head + read.map((r: ResponseRow) => layout.record(view(r))).join('');
          expect(got.length).toBe(want.length);
          const a = got.split('\r\n');
          const b = want.split('\r\n');
          for (let i = 0; i < b.length; i++) expect([i, a[i]]).toEqual([i, b[i]]);
          expect(parse(got, { bom: true })).toHaveLength(rows.length + 1);
        }
      } finally {
        exports.batchSeqRange = BATCHES;
      }
    });

    it('heads the answer columns by ref with answersBy "ref" (one header row)', async () => {
      const res = await download((await exportLink({ publicId: form.publicId, answersBy: 'ref' })).url);
      const [header, ...rows] = parse(res.body as Buffer, { bom: true }) as string[][];
      const whenId = form.blocks.find((b) => b.title === 'When')!.id;
      expect(header).toEqual([
        'id',
        'submittedAt',
        'name',
        'comment',
        'colour',
        'pets',
        'balance',
        'rating',
        'subscribe',
        whenId,
        'source',
      ]);
      expect(rows).toHaveLength(6);
      expect(rows.some((r) => r.includes('id') || r.includes('name'))).toBe(false);
    });
  });

  it('NDJSON: one line per response, each equal to get_response (answersBy too)', async () => {
    for (const answersBy of ['id', 'ref'] as const) {
      const link = await exportLink({ publicId: form.publicId, format: 'ndjson', answersBy });
      const res = await download(link.url);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('application/x-ndjson; charset=utf-8');
      expect(res.headers['content-disposition']).toContain(`filename*=UTF-8''Caf%C3%A9%20survey%2C%202026.ndjson`);
      const text = (res.body as Buffer).toString('utf8');
      expect(text.endsWith('\n')).toBe(true);
      const lines = text.trimEnd().split('\n');
      expect(lines).toHaveLength(6);
      for (const line of lines) {
        const view = JSON.parse(line) as View;
        const got = await callTool(app, token, 'get_response', {
          publicId: form.publicId,
          responseId: view.id,
          answersBy,
        });
        expect(got.status).toBe(200);
        expect(view).toEqual(got.body);
      }
      expect(lines.map((l) => JSON.parse(l).id)).toEqual((await listAll(form.publicId)).map((r) => r.id));
    }
  });

  it('exports only what the filter matches, as list_responses filters (where, since, until), in CSV and NDJSON', async () => {
    const filters = [
      { where: { block: 'rating', op: 'lte', value: 2 } },
      // Values a SQL literal must escape (the CSV's COPY takes them as literals): quotes, a backslash, $1.
      {
        where: {
          any: [
            { block: 'name', op: 'contains', value: 'ann, "the' },
            { block: 'name', op: 'equals', value: "O'Brien \\ $1 $$" },
            { hidden: 'source', op: 'in', value: ["it's", '\\', '$2'] },
          ],
        },
      },
      { where: { hidden: 'source', op: 'answered' } },
      { where: { block: 'pets', op: 'contains', value: 'Dog' } },
      { since: '2026-01-01T00:03:00Z', until: '2026-01-01T00:05:00Z' },
      {
        where: {
          any: [
            { block: 'colour', op: 'equals', value: 'Blue' },
            { block: 'subscribe', op: 'equals', value: true },
          ],
        },
        until: '2026-01-01T00:05:00Z',
      },
    ];
    for (const filter of filters) {
      const res = await download((await exportLink({ publicId: form.publicId, format: 'ndjson', ...filter })).url);
      const ids = (res.body as Buffer)
        .toString('utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l).id);
      const listed = (await listAll(form.publicId, filter)).map((r) => r.id);
      expect(ids).toEqual(listed);
      expect(ids.length).toBeLessThan(6);
      const csv = await download((await exportLink({ publicId: form.publicId, format: 'csv', ...filter })).url);
      expect(csv.status).toBe(200);
      expect((parse(csv.body as Buffer, { bom: true }) as string[][]).slice(1).map((r) => r[0])).toEqual(listed);
    }
    expect(await listAll(form.publicId, filters[1])).toHaveLength(1);
    // The filter is checked when the link is made, at its path.
    const bad = await callTool(app, token, 'export_responses', {
      publicId: form.publicId,
      where: { block: 'nope', op: 'answered' },
    });
    expect(expectError(bad, 400, 'invalid_arguments').details?.[0].path).toMatch(/^\/where/);
  });

  describe('the link', () => {
    it('is refused with 404 not_found after 15 minutes, and serves until then', async () => {
      const signer = app.get(ExportLinkStore);
      const { url } = await exportLink({ publicId: form.publicId });
      const start = Date.now();
      try {
        signer.now = () => start + EXPORT_LINK_TTL_MS - 5_000;
        expect((await download(url)).status).toBe(200);
        signer.now = () => start + EXPORT_LINK_TTL_MS + 1_000;
        const res = await request(app.getHttpServer()).get(pathOf(url));
        expect(expectError(res, 404, 'not_found').hint).toMatch(/export_responses again/);
      } finally {
        signer.now = Date.now;
      }
    });

    it('is refused with 404 when any one character changes, or when it is cut or missing', async () => {
      const { url } = await exportLink({ publicId: form.publicId });
      const link = new URL(url).searchParams.get('token')!;
      expect(link).toMatch(/^[A-Za-z0-9_-]{43}$/);
      const swap = (c: string) => (c === 'A' ? 'B' : 'A');
      const altered = [0, 5, 21, 42].map((i) => link.slice(0, i) + swap(link[i]) + link.slice(i + 1));
      for (const bad of [...altered, link.slice(0, -1), `${link}A`, `${link}.x`, '', 'x']) {
        const res = await request(app.getHttpServer()).get(`/api/v1/exports/download?token=${encodeURIComponent(bad)}`);
        expectError(res, 404, 'not_found');
      }
      expectError(await request(app.getHttpServer()).get('/api/v1/exports/download'), 404, 'not_found');
      expect((await download(url)).status).toBe(200); // the unaltered one still serves
    });

    it('is short whatever the filter: one near the largest filter accepted downloads what it matches', async () => {
      // Conditions of 900 characters that match nothing, and one that matches: as sent and as
      // stored (blocks by id, longer than refs), just under the filter's bound.
      const leaves: Array<{ block: string; op: string; value: unknown }> = [{ block: 'rating', op: 'lte', value: 2 }];
      const where = { any: leaves };
      const asStored = () => JSON.stringify({ any: leaves.map((l) => ({ ...l, block: 'b_0123456789a' })) });
      for (let i = 0; leaves.length < MAX_FILTER_LEAVES; i++) {
        const leaf = { block: 'comment', op: 'contains', value: `${i}-${'z'.repeat(900)}` };
        leaves.push(leaf);
        if (Buffer.byteLength(asStored()) > MAX_FILTER_BYTES - 100) {
          leaves.pop();
          break;
        }
      }
      expect(Buffer.byteLength(JSON.stringify(where))).toBeGreaterThan(MAX_FILTER_BYTES - 1500);
      const { url } = await exportLink({ publicId: form.publicId, format: 'ndjson', where });
      expect(url.length).toBeLessThan(200);
      const res = await download(url);
      expect(res.status).toBe(200);
      const got = (res.body as Buffer)
        .toString()
        .trimEnd()
        .split('\n')
        .map((l) => (JSON.parse(l) as View).id);
      expect(got).toEqual((await listAll(form.publicId, { where })).map((r) => r.id));
      expect(got).toHaveLength(2);
    });

    it('is stored as a hash, never as itself, and expired ones are swept when links are made', async () => {
      const store = app.get(ExportLinkStore);
      const db = app.get(DataSource);
      const key = (link: string) => createHash('sha256').update(link).digest('base64url');
      const stored = async (link: string) =>
        (await db.query('SELECT count(*)::int AS n FROM export_links WHERE id = $1', [key(link)]))[0].n as number;
      const start = Date.now();
      let old: string;
      try {
        store.now = () => start - EXPORT_LINK_TTL_MS - 60_000; // made 16 minutes ago: expired a minute ago
        old = new URL((await exportLink({ publicId: form.publicId })).url).searchParams.get('token')!;
      } finally {
        store.now = Date.now;
      }
      expect(await stored(old)).toBe(1);
      const fresh = new URL((await exportLink({ publicId: form.publicId })).url).searchParams.get('token')!;
      expect(await stored(old)).toBe(0);
      expect(await stored(fresh)).toBe(1);
      const rows = JSON.stringify(await db.query('SELECT * FROM export_links'));
      for (const link of links) expect(rows).not.toContain(link);
    });

    it("of workspace A never serves workspace B's form, even with its grant re-pointed there", async () => {
      const other = await createWorkspace(app);
      const otherToken = (await createToken(app, other)).token;
      const theirs = await app.get(FormsService).create(other.id, {
        title: 'Theirs',
        blocks: [{ type: 'short_text', title: 'Secret', required: true }],
      });
      const stored = await app.get(FormsService).get(other.id, theirs.publicId);
      await app.get(ResponsesService).create(stored, { [stored.blocks[0].id]: 'B only' }, { source: 'import' });
      // A's credential cannot make a link to B's form.
      expectError(await callTool(app, token, 'export_responses', { publicId: theirs.publicId }), 404, 'not_found');
      // A grant of A, re-pointed at B's form and stored as a link, is still bound to A.
      const signer = app.get(ExportLinkStore);
      const mine = (await signer.find(
        new URL((await exportLink({ publicId: form.publicId })).url).searchParams.get('token'),
      ))!;
      for (const grant of [
        { ...mine, p: theirs.publicId, f: stored.id },
        { ...mine, p: theirs.publicId },
        { ...mine, f: stored.id },
      ]) {
        const res = await request(app.getHttpServer()).get(
          `/api/v1/exports/download?token=${await signer.create(grant)}`,
        );
        expectError(res, 404, 'not_found');
        expect(JSON.stringify(res.body)).not.toContain('B only');
      }
      // B's own link serves B's form.
      const res = await download((await exportLink({ publicId: theirs.publicId, format: 'ndjson' }, otherToken)).url);
      expect((res.body as Buffer).toString()).toContain('B only');
    });

    /** Polls a link until it is refused; the time it took (ms). */
    const refusedWithin = async (url: string, limitMs = 6_000) => {
      const start = Date.now();
      for (;;) {
        const res = await request(app.getHttpServer()).get(pathOf(url));
        if (res.status === 404) {
          expectError(res, 404, 'not_found');
          return Date.now() - start;
        }
        expect(res.status).toBe(200);
        if (Date.now() - start > limitMs) throw new Error(`the link still served after ${limitMs} ms`);
        await new Promise((r) => setTimeout(r, 200));
      }
    };

    it('stops serving within 5 s when its token is revoked, its creator removed, or its form deleted', async () => {
      const revoked = await createToken(app, ws, { role: 'viewer' });
      const byRevoked = await exportLink({ publicId: form.publicId }, revoked.token);
      expect((await download(byRevoked.url)).status).toBe(200);
      await app.get(TokensService).revoke(revoked.id);
      expect(await refusedWithin(byRevoked.url)).toBeLessThan(5_000);

      const member = await app.get(WorkspacesService).addMember(ws.slug, `member-${Date.now()}@example.com`, 'admin');
      const theirs = await createToken(app, ws, { role: 'viewer', creatorUserId: member.user.id });
      const byMember = await exportLink({ publicId: form.publicId }, theirs.token);
      expect((await download(byMember.url)).status).toBe(200);
      await app.get(WorkspacesService).removeMember(ws.slug, member.user.email);
      expect(await refusedWithin(byMember.url)).toBeLessThan(5_000);

      const doomed = await app.get(FormsService).create(ws.id, {
        title: 'Doomed',
        blocks: [{ type: 'short_text', title: 'Q', required: false }],
      });
      const byForm = await exportLink({ publicId: doomed.publicId });
      expect((await download(byForm.url)).status).toBe(200);
      const admin = await createToken(app, ws, { role: 'admin' });
      const principal = (await app.get(TokensService).verify(admin.token)) as { ok: true; principal: never };
      await app.get(FormsService).remove(principal.principal, doomed.publicId);
      expect(await refusedWithin(byForm.url, 1_000)).toBeLessThan(1_000);
    });

    it('of an OAuth connection stops when its grant or its access token is revoked', async () => {
      const oauth = async () =>
        createOAuthAccessToken(app, { workspaceId: ws.id, userId: ws.ownerId, scope: 'responses:read' });
      const db = app.get(DataSource);

      const a = await oauth();
      const byGrant = await exportLink({ publicId: form.publicId }, a.token);
      expect((await download(byGrant.url)).status).toBe(200);
      await db.query('UPDATE oauth_grants SET revoked_at = now() WHERE grant_id = $1', [a.grantId]);
      expect(await refusedWithin(byGrant.url)).toBeLessThan(5_000);

      const b = await oauth();
      const byToken = await exportLink({ publicId: form.publicId }, b.token);
      expect((await download(byToken.url)).status).toBe(200);
      await db.query(`DELETE FROM oauth_models WHERE model = 'AccessToken' AND id = $1`, [b.token]); // RFC 7009 revocation
      expect(await refusedWithin(byToken.url)).toBeLessThan(5_000);
    });

    it('answers HEAD with the headers alone, and leaves no download open', async () => {
      const { url } = await exportLink({ publicId: form.publicId });
      const batches = jest.spyOn(app.get(ExportsRepository), 'readCsvBatch');
      try {
        const res = await request(app.getHttpServer()).head(pathOf(url));
        expect(res.status).toBe(200);
        expect(res.headers['content-type']).toBe('text/csv; charset=utf-8; header=present');
        expect(res.headers['content-length']).toBeUndefined(); // not 0: the GET is not empty
        expect(res.text ?? '').toBe('');
        expect(batches).not.toHaveBeenCalled(); // nothing read to be dropped
        expect(app.get(LongReads).runningFor(ws.id)).toBe(0);
      } finally {
        batches.mockRestore();
      }
      const start = Date.now();
      while (app.get(ExportsService).openDownloads > 0 && Date.now() - start < 2_000)
        await new Promise((r) => setTimeout(r, 20));
      expect(app.get(ExportsService).openDownloads).toBe(0);
    });

    it('made by a signed-in person (the results pages) stops when that person leaves the workspace', async () => {
      const member = await app.get(WorkspacesService).addMember(ws.slug, `reader-${Date.now()}@example.com`, 'viewer');
      const workspace = await app.get(WorkspacesService).requireBySlug(ws.slug);
      const { url } = await app.get(ExportsService).createLink(
        {
          credential: { kind: 'session', id: member.user.id },
          credentialKey: `session:${member.user.id}`,
          workspace: { id: workspace.id, name: workspace.name, slug: workspace.slug, plan: workspace.plan },
          role: 'viewer',
          scopes: ['responses:read'],
          userId: member.user.id,
        },
        form.publicId,
        { format: 'csv', answersBy: 'id', filter: {} },
      );
      links.push(new URL(url).searchParams.get('token')!);
      expect((await download(url)).status).toBe(200);
      await app.get(WorkspacesService).removeMember(ws.slug, member.user.email);
      expect(await refusedWithin(url)).toBeLessThan(5_000);
    });

    it("spends the budget of the credential that made it (both budgets' headers on the download)", async () => {
      const { url } = await exportLink({ publicId: form.publicId });
      const res = await download(url);
      expect(res.status).toBe(200);
      expect(res.headers['ratelimit-policy']).toMatch(/"ip";q=\d+;w=60, "cred";q=\d+;w=60/);
    });
  });

  it('streams: the first bytes before the last batch is read, no more read than the client takes, and a disconnect ends the reading', async () => {
    const n = 4000;
    const big = await bigForm(ws.id, n);
    const db = app.get(DataSource);
    const exports = app.get(ExportsService);
    const repo = app.get(ExportsRepository);
    const batches = jest.spyOn(repo, 'readCsvBatch');
    exports.batchSeqRange = { csv: 10, ndjson: 10 }; // 400 batches of 10 responses (40 KB)
    try {
      const { url } = await exportLink({ publicId: big.publicId, format: 'csv' });
      const address = app.getHttpServer().address() as { port: number };
      const req = http.get({ host: '127.0.0.1', port: address.port, path: pathOf(url) });
      const res = await new Promise<http.IncomingMessage>((resolve) => req.on('response', resolve));
      expect(res.statusCode).toBe(200);
      // The first bytes arrive with a few batches read, not 400.
      await new Promise((resolve) => res.once('data', resolve));
      expect(batches.mock.calls.length).toBeLessThan(400);
      // A client that reads nothing more: the reading stops once the buffers are full (~16 MB here at most).
      res.pause();
      let before = -1;
      for (let i = 0; i < 50 && before !== batches.mock.calls.length; i++) {
        before = batches.mock.calls.length;
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(batches.mock.calls.length).toBeLessThan(400);
      expect(exports.openDownloads).toBe(1);
      // The client goes away: the reading ends, and no statement of the export is left running.
      req.destroy();
      const start = Date.now();
      while (exports.openDownloads > 0 && Date.now() - start < 5_000) await new Promise((r) => setTimeout(r, 50));
      expect(exports.openDownloads).toBe(0);
      const stopped = batches.mock.calls.length;
      expect(stopped).toBeLessThan(400);
      const running = await db.query(
        `SELECT query FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND state <> 'idle' AND query LIKE '%formwork:export%'`,
      );
      expect(running).toEqual([]);
      await new Promise((r) => setTimeout(r, 300));
      expect(batches.mock.calls.length).toBe(stopped);

      // A client that reads it all gets every response, once, in order.
      const whole = await download(url);
      const rows = parse(whole.body as Buffer, { bom: true }) as string[][];
      expect(rows).toHaveLength(n + 1);
      expect(rows[n][2]).toBe(`${'x'.repeat(4000)}${n}`);

      // A download under way whose token is revoked is cut short (no final chunk: the client sees it fail).
      const doomed = await createToken(app, ws, { role: 'viewer' });
      const link = await exportLink({ publicId: big.publicId, format: 'ndjson' }, doomed.token);
      const slow = http.get({ host: '127.0.0.1', port: address.port, path: pathOf(link.url) });
      const slowRes = await new Promise<http.IncomingMessage>((resolve) => slow.on('response', resolve));
      expect(slowRes.statusCode).toBe(200);
      slowRes.pause();
      await app.get(TokensService).revoke(doomed.id);
      await new Promise((r) => setTimeout(r, 4_500)); // past the credential cache
      let received = 0;
      const ended = await new Promise<string>((resolve) => {
        slowRes.on('data', (c: Buffer) => (received += c.length));
        slowRes.on('end', () => resolve('end'));
        slowRes.on('aborted', () => resolve('aborted'));
        slowRes.on('error', () => resolve('error'));
        slowRes.resume();
      });
      expect(ended).not.toBe('end');
      expect(received).toBeLessThan(n * 4000);
    } finally {
      exports.batchSeqRange = BATCHES;
      batches.mockRestore();
    }
  }, 60_000);

  it("caps one workspace's long reads at once (downloads, filtered reads): 429 past the cap, other workspaces unaffected, slots given back", async () => {
    const longReads = app.get(LongReads);
    expect(longReads.perWorkspace).toBe(2); // the default
    expect(longReads.perInstance).toBe(4); // the pool of 6 less 2
    const exports = app.get(ExportsService);
    exports.batchSeqRange = { csv: 10, ndjson: 10 };
    // Workspace A (ws) starts two big downloads and stops reading them: both hold a slot.
    const big = await bigForm(ws.id, 3000);
    const held = [
      await pausedDownload((await exportLink({ publicId: big.publicId })).url),
      await pausedDownload((await exportLink({ publicId: big.publicId, format: 'ndjson' })).url),
    ];
    try {
      expect(longReads.runningFor(ws.id)).toBe(2);
      // A third download of A, and a filtered read of A, are refused at once.
      const third = await request(app.getHttpServer()).get(pathOf((await exportLink({ publicId: form.publicId })).url));
      expectError(third, 429, 'rate_limited');
      expect(third.headers['retry-after']).toBe(String(LONG_READ_RETRY_AFTER_S));
      expect(third.body.error.hint).toMatch(/Retry after/);
      const where = { block: 'rating', op: 'lte', value: 2 };
      for (const tool of ['list_responses', 'summarize_responses']) {
        const res = await callTool(app, token, tool, { publicId: form.publicId, where });
        expectError(res, 429, 'rate_limited');
        expect(res.headers['retry-after']).toBe(String(LONG_READ_RETRY_AFTER_S));
      }
      // Reads without a filter are not long reads: they still answer.
      const plain = await callTool(app, token, 'list_responses', { publicId: form.publicId });
      expect(plain.status).toBe(200);
      expect(plain.body.total).toBe(6);
      // Workspace B's filtered reads and download answer in full meanwhile.
      const other = await createWorkspace(app);
      const otherToken = (await createToken(app, other, { role: 'viewer' })).token;
      const theirs = await app.get(FormsService).create(other.id, {
        title: 'Theirs',
        blocks: [{ type: 'rating', title: 'Score', ref: 'score', max: 5 }],
      });
      const stored = await app.get(FormsService).get(other.id, theirs.publicId);
      for (const score of [1, 2, 5]) {
        await app.get(ResponsesService).create(stored, { [stored.blocks[0].id]: score }, { source: 'import' });
      }
      const filter = { publicId: theirs.publicId, where: { block: 'score', op: 'lte', value: 2 } };
      const listed = await callTool(app, otherToken, 'list_responses', filter);
      expect(listed.status).toBe(200);
      expect(listed.body.total).toBe(2);
      const summary = await callTool(app, otherToken, 'summarize_responses', filter);
      expect(summary.status).toBe(200);
      expect(summary.body.total).toBe(2);
      const theirLink = await exportLink({ ...filter, format: 'ndjson' }, otherToken);
      const theirDownload = await download(theirLink.url);
      expect(theirDownload.status).toBe(200);
      expect((theirDownload.body as Buffer).toString().trimEnd().split('\n')).toHaveLength(2);
      expect(longReads.runningFor(other.id)).toBe(0);
    } finally {
      for (const req of held) req.destroy();
    }
    // The clients went away: their slots come back, and A's filtered reads answer again.
    const start = Date.now();
    while (longReads.runningFor(ws.id) > 0 && Date.now() - start < 5_000) await new Promise((r) => setTimeout(r, 50));
    expect(longReads.runningFor(ws.id)).toBe(0);
    const again = await callTool(app, token, 'list_responses', {
      publicId: form.publicId,
      where: { block: 'rating', op: 'lte', value: 2 },
    });
    expect(again.status).toBe(200);
    expect(again.body.total).toBe(2);
    exports.batchSeqRange = BATCHES;
    // Slots are given back after a refused or failed read too: none is left taken.
    expect(longReads.runningFor(ws.id)).toBe(0);
  }, 60_000);

  it('ends a download whose client stopped reading, within 5 s of its token being revoked or after EXPORT_IDLE_TIMEOUT_MS, and frees its slot', async () => {
    const longReads = app.get(LongReads);
    const exports = app.get(ExportsService);
    const repo = app.get(ExportsRepository);
    const batches = [jest.spyOn(repo, 'readCsvBatch'), jest.spyOn(repo, 'readBatch')];
    exports.batchSeqRange = { csv: 10, ndjson: 10 }; // short statements: the embedded database's one session stays free for the rest
    const big = await bigForm(ws.id, 3000); // 12 MB: more than the kernel's buffers hold
    const where = { block: 'rating', op: 'lte', value: 2 };
    const filtered = () => callTool(app, token, 'list_responses', { publicId: form.publicId, where });
    const clients: http.ClientRequest[] = [];
    /** Two downloads their client stopped reading, holding the workspace's two slots. */
    const holdBoth = async (bearer: string) => {
      const held = [
        await pausedDownload((await exportLink({ publicId: big.publicId }, bearer)).url),
        await pausedDownload((await exportLink({ publicId: big.publicId, format: 'ndjson' }, bearer)).url),
      ];
      clients.push(...held);
      expect(longReads.runningFor(ws.id)).toBe(2);
      expectError(await filtered(), 429, 'rate_limited');
      return held;
    };
    /** Whether each client, reading again, gets its download to its end (never, when the server cut it). */
    const completed = (held: Array<{ response: http.IncomingMessage }>) =>
      Promise.all(
        held.map(
          ({ response }) =>
            new Promise<boolean>((resolve) => {
              response.once('close', () => resolve(response.complete));
              response.resume();
            }),
        ),
      );
    /** Waits (at most `limitMs`) for the workspace's slots to come back; the time it took. */
    const freedWithin = async (limitMs: number) => {
      const start = Date.now();
      while (longReads.runningFor(ws.id) > 0 && Date.now() - start < limitMs)
        await new Promise((r) => setTimeout(r, 50));
      expect(longReads.runningFor(ws.id)).toBe(0);
      return Date.now() - start;
    };
    try {
      // Revoked mid-download: both cut within the 5 s the docs promise, however long the clients would wait.
      exports.idleMs = 600_000;
      const doomed = await createToken(app, ws, { role: 'viewer' });
      const revoked = await holdBoth(doomed.token);
      await app.get(TokensService).revoke(doomed.id);
      await freedWithin(5_000);
      expect(await completed(revoked)).toEqual([false, false]);
      expect((await filtered()).status).toBe(200);

      // A credential still valid whose clients read nothing more: ended after the idle bound.
      exports.idleMs = 2_000;
      const idle = await holdBoth(token);
      // The idle time counts from when the server can write no more (the buffers are full): no
      // batch read for a second (the embedded database reads slower than the kernel takes).
      const read = () => batches.reduce((n, spy) => n + spy.mock.calls.length, 0);
      for (let before = -1, i = 0; i < 60 && before !== read(); i++) {
        before = read();
        await new Promise((r) => setTimeout(r, 1_000));
      }
      await freedWithin(2_000 + 5_000);
      expect(await completed(idle)).toEqual([false, false]);
      const again = await filtered();
      expect(again.status).toBe(200);
      expect(again.body.total).toBe(2);
      expect(exports.openDownloads).toBe(0);
    } finally {
      for (const req of clients) req.destroy();
      for (const spy of batches) spy.mockRestore();
      exports.batchSeqRange = BATCHES;
      exports.idleMs = 30_000;
    }
  }, 120_000);

  it('over MCP, carries the link as a resource_link content item with its mimeType', async () => {
    const client = new Client({ name: 'formwork-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${await app.getUrl()}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      }),
    );
    try {
      const result = await client.callTool({
        name: 'export_responses',
        arguments: { publicId: form.publicId, format: 'ndjson' },
      });
      expect(result.isError).toBeFalsy();
      const structured = result.structuredContent as { url: string; format: string };
      const content = result.content as Array<Record<string, unknown>>;
      expect(content).toHaveLength(2);
      expect(JSON.parse(content[0].text as string)).toEqual(structured);
      expect(content[1]).toMatchObject({
        type: 'resource_link',
        uri: structured.url,
        mimeType: 'application/x-ndjson',
      });
      expect((await download(structured.url)).status).toBe(200);
    } finally {
      await client.close();
    }
  });

  it('answers a viewer on a free plan, and refuses without responses:read', async () => {
    const noScope = await createToken(app, ws, { role: 'admin', scopes: ['forms:read'] });
    expectError(
      await callTool(app, noScope.token, 'export_responses', { publicId: form.publicId }),
      403,
      'insufficient_scope',
    );
    expectError(
      await callTool(app, token, 'export_responses', { publicId: form.publicId, format: 'xlsx' }),
      400,
      'invalid_arguments',
    );
    expect((await callTool(app, token, 'export_responses', { publicId: form.publicId })).status).toBe(200);
  });

  it('records who exported what in the audit trail: form, format, filter, and never the link', async () => {
    const where = { block: 'rating', op: 'lte', value: 2 };
    const { expiresAt } = await exportLink({
      publicId: form.publicId,
      format: 'ndjson',
      where,
      since: '2026-01-01T00:00:00Z',
    });
    const rows: Array<{ actor_kind: string; actor_id: string; details: Record<string, unknown>; request_id: string }> =
      await app
        .get(DataSource)
        .query(
          `SELECT actor_kind, actor_id, details, request_id FROM audit_events WHERE workspace_id = $1 AND action = 'responses.export' AND subject_id = $2 ORDER BY at DESC, id DESC`,
          [ws.id, form.id],
        );
    expect(rows.length).toBeGreaterThanOrEqual(1);
    const rating = form.blocks.find((b) => b.ref === 'rating')!.id;
    expect(rows[0]).toMatchObject({
      actor_kind: 'api_token',
      details: {
        publicId: form.publicId,
        format: 'ndjson',
        answersBy: 'id',
        where: { block: rating, op: 'lte', value: 2 },
        since: '2026-01-01T00:00:00Z',
        expiresAt,
      },
    });
    expect(rows[0].request_id).toBeTruthy();
    const stored = JSON.stringify(
      await app.get(DataSource).query(`SELECT details FROM audit_events WHERE workspace_id = $1`, [ws.id]),
    );
    for (const link of links) expect(stored).not.toContain(link);
  });

  it('never writes a link to the log (access lines, refusals, cut downloads)', async () => {
    // Whatever ran before (all the tests above, in a full run), and one download and one refusal here.
    const { url } = await exportLink({ publicId: form.publicId });
    expect((await download(url)).status).toBe(200);
    expectError(await request(app.getHttpServer()).get(`${pathOf(url)}x`), 404, 'not_found');
    const access = logLines.filter((l) => l.includes('"context":"Http"') && l.includes('/api/v1/exports/download'));
    expect(access.length).toBeGreaterThanOrEqual(2); // the access lines are there, with the path only
    for (const line of access) expect(JSON.parse(line).path).toBe('/api/v1/exports/download');
    const everything = logLines.join('\n');
    for (const link of links) expect(everything).not.toContain(link);
  });
});
