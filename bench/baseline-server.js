'use strict';
/**
 * The baseline of bench/get-form.js: the least a service can do to answer "give me this form"
 * and "store this response". A bare node:http server and a pg Pool (the size of Formwork's default
 * pool) that, per request, reads the JSON body and runs ONE query:
 *   POST /form {id}: the primary-key query returning the form row with its blocks as one JSON value;
 *   POST /response {formId, answers}: one INSERT into responses (seq from a counter of this
 *   process, far above the service's), answering the new row's id and time.
 * Answers are JSON. No framework, no auth, no rate limit, no validation.
 *
 * Env: DATABASE_URL (required), PORT (required), POOL_SIZE (default 10).
 * Run as a child process by bench/get-form.js; stops on SIGTERM/SIGINT.
 */
const http = require('node:http');
const { Pool } = require('pg');

const port = Number(process.env.PORT);
const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.POOL_SIZE || 10), connectionTimeoutMillis: 10_000 });

const SQL = `SELECT f.*, (SELECT json_agg(b ORDER BY b.position) FROM blocks b WHERE b.form_id = f.id) AS blocks
  FROM forms f WHERE f.id = $1`;

const INSERT = `INSERT INTO responses (form_id, seq, answers, source) VALUES ($1, $2, $3, 'api') RETURNING id, submitted_at`;
let seq = 1_000_000_000_000;

function send(res, status, value) {
  const payload = JSON.stringify(value);
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(payload) });
  res.end(payload);
}

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/healthz') return send(res, 200, { status: 'ok' });
  if (req.method !== 'POST' || (req.url !== '/form' && req.url !== '/response')) return send(res, 404, { error: 'not found' });
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
    if (req.url === '/response') {
      if (typeof args.formId !== 'string' || typeof args.answers !== 'object') return send(res, 400, { error: 'formId and answers are required' });
      return pool.query(INSERT, [args.formId, seq++, JSON.stringify(args.answers)]).then(
        ({ rows }) => send(res, 200, { id: rows[0].id, submittedAt: rows[0].submitted_at }),
        (err) => {
          process.stderr.write(`baseline: insert failed: ${err.message}\n`);
          send(res, 500, { error: 'insert failed' });
        },
      );
    }
    const id = args.id;
    if (typeof id !== 'string') return send(res, 400, { error: 'id is required' });
    pool.query(SQL, [id]).then(
      ({ rows }) => (rows[0] ? send(res, 200, rows[0]) : send(res, 404, { error: 'no such form' })),
      (err) => {
        process.stderr.write(`baseline: query failed: ${err.message}\n`);
        send(res, 500, { error: 'query failed' });
      },
    );
  });
});
// The same keep-alive timeout as Formwork's main.ts.
server.keepAliveTimeout = 65_000;
server.listen(port, '127.0.0.1', () => process.stdout.write(`baseline listening on 127.0.0.1:${port}\n`));

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
