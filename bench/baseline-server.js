'use strict';
/**
 * The baseline of the benchmarks: the least a service can do, on a bare node:http server and a pg
 * Pool (the size of Formwork's default pool). No framework, no auth, no rate limit, no validation.
 *
 *   POST /form      {"id"}: ONE primary-key query returning the form row with its blocks as one JSON
 *                   value, answered as JSON (bench/get-form.js: "give me this form");
 *   POST /stored-form {"id"}: ONE primary-key query returning a stored form document (the form as
 *                   get_form answers it, one JSON value in bench_stored_forms, made by bench/get-form.js),
 *                   answered as JSON: the floor of a service that keeps its forms as documents;
 *   GET /page/{id}: ONE primary-key query returning a stored HTML page (bench_stored_pages, made by
 *                   bench/page.js: the respondent page as Formwork served it), answered as HTML;
 *   POST /response  {"formId", "answers"}: ONE INSERT of the answers into bench_baseline_responses
 *                   (made by bench/hot-forms.js, or by this
 *                   server on start when absent, as for bench/get-form.js's create_response comparison), answered with the new row's id and time as JSON.
 *
 * Env: DATABASE_URL (required), PORT (required), POOL_SIZE (default 10).
 * Run as a child process by the benchmarks; stops on SIGTERM/SIGINT.
 */
const http = require('node:http');
const { Pool } = require('pg');

const port = Number(process.env.PORT);
const pool = new Pool({
  connectionString: process.env.DATABASE_URL,
  max: Number(process.env.POOL_SIZE || 10),
  connectionTimeoutMillis: 10_000,
});

const SQL = `SELECT f.*, (SELECT json_agg(b ORDER BY b.position) FROM blocks b WHERE b.form_id = f.id) AS blocks
  FROM forms f WHERE f.id = $1`;
const STORED = 'SELECT document FROM bench_stored_forms WHERE id = $1';
const INSERT = `INSERT INTO bench_baseline_responses (form_id, answers) VALUES ($1, $2::jsonb) RETURNING id, submitted_at`;

const CREATE = `CREATE TABLE IF NOT EXISTS bench_baseline_responses (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(), form_id uuid NOT NULL, submitted_at timestamptz NOT NULL DEFAULT now(), answers jsonb NOT NULL)`;
const ready = pool
  .query(CREATE)
  .then(() =>
    pool.query(
      'CREATE INDEX IF NOT EXISTS bench_baseline_responses_form_id_submitted_at_idx ON bench_baseline_responses (form_id, submitted_at)',
    ),
  );

function send(res, status, value) {
  const payload = JSON.stringify(value);
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(payload),
  });
  res.end(payload);
}

const PAGE = 'SELECT html FROM bench_stored_pages WHERE id = $1';

/** GET /page/{id}: ONE primary-key query of a stored page (bench/page.js), answered as HTML. */
function sendPage(res, id) {
  pool.query(PAGE, [id]).then(
    ({ rows }) => {
      if (!rows[0]) return send(res, 404, { error: 'not found' });
      const html = rows[0].html;
      res.writeHead(200, {
        'Content-Type': 'text/html; charset=utf-8',
        'Content-Length': Buffer.byteLength(html),
        'Cache-Control': 'no-store',
      });
      res.end(html);
    },
    (err) => {
      process.stderr.write(`baseline: query failed: ${err.message}\n`);
      send(res, 500, { error: 'query failed' });
    },
  );
}

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/healthz') return send(res, 200, { status: 'ok' });
  if (req.method === 'GET' && req.url.startsWith('/page/')) return sendPage(res, req.url.slice('/page/'.length));
  if (req.method !== 'POST' || !['/form', '/stored-form', '/response'].includes(req.url))
    return send(res, 404, { error: 'not found' });
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (chunk) => (body += chunk));
  req.on('end', () => {
    let args;
    try {
      args = JSON.parse(body);
    } catch {
      return send(res, 400, { error: 'body is not JSON' });
    }
    const failed = (err) => {
      process.stderr.write(`baseline: query failed: ${err.message}\n`);
      send(res, 500, { error: 'query failed' });
    };
    if (req.url === '/response') {
      if (typeof args.formId !== 'string' || typeof args.answers !== 'object')
        return send(res, 400, { error: 'formId and answers are required' });
      return pool
        .query(INSERT, [args.formId, JSON.stringify(args.answers)])
        .then(({ rows }) => send(res, 200, rows[0]), failed);
    }
    if (typeof args.id !== 'string') return send(res, 400, { error: 'id is required' });
    const stored = req.url === '/stored-form';
    pool
      .query(stored ? STORED : SQL, [args.id])
      .then(
        ({ rows }) =>
          rows[0] ? send(res, 200, stored ? rows[0].document : rows[0]) : send(res, 404, { error: 'no such form' }),
        failed,
      );
  });
});
// The same keep-alive timeout as Formwork's main.ts.
server.keepAliveTimeout = 65_000;
ready.then(
  () => server.listen(port, '127.0.0.1', () => process.stdout.write(`baseline listening on 127.0.0.1:${port}\n`)),
  (err) => {
    process.stderr.write(`baseline: cannot create bench_baseline_responses: ${err.message}\n`);
    process.exit(1);
  },
);

let closing = false;
function shutdown() {
  if (closing) return;
  closing = true;
  server.close();
  server.closeAllConnections();
  pool.end().finally(() => process.exit(0));
  setTimeout(() => process.exit(0), 5_000).unref();
}
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
