'use strict';
/**
 * Two steps of a tool call measured alone, in CPU per call (process.cpuUsage, so a loaded machine
 * slows them but does not inflate them the way it inflates a sampled profile's socket writes):
 *
 *  - the access log line: the service's own logger (dist/src/common/logging.js, production
 *    configuration: JSON, redaction, the request-id mixin, asynchronous writes) writing the line
 *    app.ts writes per request, to a file;
 *  - serializing get_form's answer for the 9-block form with long titles (as bench/get-form.js
 *    makes it): JSON.stringify against fast-json-stringify compiled from the tool's output schema
 *    (dist/src/forms/form.schemas.js FormSchema), and checks that both give the same JSON value.
 *
 *   npm run build && node bench/cpu-profile-parts.js [calls]     # 50,000 calls by default
 *
 * Prints one line per part: µs of CPU per call (user + system of this process, the write thread
 * of the log included).
 */
const { mkdtempSync, rmSync, statSync } = require('node:fs');
const { join } = require('node:path');
const os = require('node:os');
const { isDeepStrictEqual } = require('node:util');

const DIST = join(__dirname, '..', 'dist', 'src');
const { createLog } = require(join(DIST, 'common', 'logging.js'));
const { FormSchema } = require(join(DIST, 'forms', 'form.schemas.js'));
const fastJson = require('fast-json-stringify');
const pino = require('pino');

const calls = Number(process.argv[2] || 50_000);
const words = 'please tell us in your own words how this part of the service worked for you'.split(' ');
const text = (start, n) => {
  let out = start;
  for (let i = 0; out.length < n; i++) out += ` ${words[i % words.length]}`;
  return out.slice(0, n);
};

/** get_form's answer for the long form: the demo's 9 blocks, titles 250, descriptions 400, labels 80. */
function longForm() {
  const now = new Date().toISOString();
  const choices = (n) => Array.from({ length: n }, (_, i) => ({ id: `c_${i}abcdef`, label: text(`Choice ${i}`, 80) }));
  const block = (i, type, extra = {}) => ({
    id: `b_${i}abcdefgh`,
    type,
    title: text(`Question ${i}`, 250),
    description: text('Why we ask:', 400),
    required: i % 3 === 0,
    ...extra,
  });
  return {
    publicId: 'AbCdEfGhIj',
    title: text('Customer feedback, long titles', 300),
    description: text('About this form:', 1000),
    status: 'published',
    version: 2,
    createdAt: now,
    updatedAt: now,
    publishedAt: now,
    closedAt: null,
    blocks: [
      block(0, 'statement'),
      block(1, 'short_text'),
      block(2, 'email'),
      block(3, 'multiple_choice', { choices: choices(4) }),
      block(4, 'checkboxes', { choices: choices(5) }),
      block(5, 'rating', { max: 5 }),
      block(6, 'linear_scale', { min: 0, max: 10 }),
      block(7, 'yes_no'),
      block(8, 'long_text'),
    ],
  };
}

/**
 * The service's logger without its redaction: what createLog sets (pino keeps it behind a symbol,
 * so rebuilt here), minus `redact`, and a mixin that adds nothing (no request is being served).
 */
function createLogWithout(service, file) {
  return pino(
    {
      level: service.level,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      mixin: () => ({}),
    },
    pino.destination({ dest: file, sync: false }),
  );
}

/** CPU µs per call of `fn` over `n` calls, after a warm-up of n / 10. */
function cpuPerCall(fn, n) {
  for (let i = 0; i < n / 10; i++) fn(i);
  const start = process.cpuUsage();
  for (let i = 0; i < n; i++) fn(i);
  const used = process.cpuUsage(start);
  return (used.user + used.system) / n;
}

async function main() {
  const dir = mkdtempSync(join(os.tmpdir(), 'formwork-log-'));
  const file = join(dir, 'service.log');
  try {
    const line = (log) => (i) =>
      log.info(
        {
          requestId: `req-${i}`,
          context: 'Http',
          method: 'POST',
          path: '/api/v1/tools/get_form',
          status: 200,
          ms: 3.14,
          ip: '127.0.0.1',
          credential: 'cred_0123456789',
        },
        'request',
      );
    // The service's logger, as in production, to a file (what `node dist/src/main.js >> file` does).
    const service = createLog(
      { logLevel: 'info', production: true },
      pino.destination({ dest: file, sync: false, mkdir: true }),
    );
    const plain = pino({ level: 'info' }, pino.destination({ dest: file, sync: false }));
    // process.cpuUsage() counts every thread: the writes done meanwhile are in the figures.
    const logUs = cpuPerCall(line(service), calls);
    const plainUs = cpuPerCall(line(plain), calls);
    const noRedaction = createLogWithout(service, file);
    const noRedactionUs = cpuPerCall(line(noRedaction), calls);
    await new Promise((r) => setTimeout(r, 500));
    const bytes = statSync(file).size;
    process.stdout.write(
      `access log line: the service's logger ${logUs.toFixed(1)} µs per line; the same options without redaction ${noRedactionUs.toFixed(1)} µs; a bare pino logger ${plainUs.toFixed(1)} µs (${(bytes / (3.3 * calls)).toFixed(0)} bytes a line)\n`,
    );

    const form = longForm();
    const compiled = fastJson(JSON.parse(JSON.stringify(FormSchema)));
    const a = JSON.stringify(form);
    const b = compiled(form);
    const same = isDeepStrictEqual(JSON.parse(a), JSON.parse(b));
    const jsonUs = cpuPerCall(() => JSON.stringify(form), calls / 5);
    const fjsUs = cpuPerCall(() => compiled(form), calls / 5);
    process.stdout.write(
      `get_form answer of the long form (${Buffer.byteLength(a)} bytes): JSON.stringify ${jsonUs.toFixed(1)} µs, fast-json-stringify ${fjsUs.toFixed(1)} µs (same JSON value: ${same ? 'yes' : 'NO'}; same text: ${a === b ? 'yes' : 'no'})\n`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`${err.stack}\n`);
  process.exitCode = 1;
});
