'use strict';
/**
 * Where a tool call's CPU goes, step by step: reads a V8 .cpuprofile of Formwork under load (as
 * bench/get-form.js writes with BENCH_PROFILE=1) and gives each sample to ONE step of the tool
 * path, by the frames on its stack (self and child time: a sample inside JSON.stringify called by
 * the access log line is the log line's; see the rules below). With the request count, each step's
 * sampled time per request; with the CPU per request measured from /proc, each step's share of it.
 *
 *   node bench/cpu-profile-steps.js FILE.cpuprofile [requests [measured µs per request]]
 *
 * Used by bench/get-form.js for its profile summary.
 */
const { readFileSync } = require('node:fs');

/**
 * Two kinds of rule. CAPTURING steps own everything under them: the first of them (in this order)
 * with a frame anywhere on the stack takes the sample (a JSON.stringify inside pino is the log
 * line's, a socket write inside pg is the query's). Otherwise the INNERMOST frame that a LOCAL rule
 * knows decides (a hook that calls `done()` runs the rest of the request under it, so the frames
 * near the leaf say what the work is).
 */
const has = (s) => (f) => f.url.includes(s);
const fnIs =
  (...names) =>
  (f) =>
    names.includes(f.fn);
const any =
  (...tests) =>
  (f) =>
    tests.some((t) => t(f));
const PROFILER = '(the profiler itself)';
const LOG = 'access log line (pino, redaction, write to the file)';
const REDIS = 'budgets: Redis round trip (ioredis)';
const VIEW = 'view (formView, blocksView: rows to the API shape)';
const QUERY = 'query (TypeORM, pg, socket to PostgreSQL, repository)';
const SERIALIZE = 'serialization of the answer (JSON.stringify)';
const WRITE = 'the answer written (onSend hooks, headers, socket write)';
const CAPTURING = [
  // Starting and stopping the profiler (bench/cpu-profile-hook.js): not the service's work, left out.
  [PROFILER, has('cpu-profile-hook.js')],
  ['GC', fnIs('(garbage collector)')],
  [LOG, any(has('/node_modules/pino'), has('/node_modules/@pinojs/'), has('/node_modules/sonic-boom'))],
  [REDIS, has('/node_modules/ioredis')],
  [VIEW, fnIs('formView', 'blocksView', 'blockView')],
  [QUERY, any(has('/node_modules/typeorm'), has('/node_modules/pg'), has('/node_modules/postgres-'))],
  [SERIALIZE, any((f) => f.fn === 'serialize' && f.url.includes('/node_modules/fastify'), has('fast-json-stringify'))],
  [WRITE, any(fnIs('writePayload', 'onSendEnd', 'onSendHook'), (f) => f.url === 'node:_http_outgoing')],
];
const LOCAL = [
  ['budgets: rate-limit service and hooks', has('/dist/src/rate-limit/')],
  ['authentication (token lookup)', has('/dist/src/auth/')],
  [
    'argument validation (nesting, unstorable text, Ajv)',
    any(fnIs('checkArguments', 'validate'), has('/dist/src/common/validation/'), has('/node_modules/ajv')),
  ],
  [QUERY, any(has('/dist/src/database/'), has('/dist/src/forms/'), has('/dist/src/responses/'))],
  ['Nest (router, guards, interceptors, params)', any(has('/node_modules/@nestjs/'), has('/dist/src/tools/'))],
  [
    'other hooks (request id, CORS, content checks, idempotency)',
    any(has('/dist/src/'), has('/node_modules/@fastify/')),
  ],
  [
    'Fastify (routing, request/reply, body)',
    any(has('/node_modules/fastify'), has('/node_modules/find-my-way'), has('/node_modules/avvio')),
  ],
  ['node:http, sockets, timers (parse, events)', (f) => f.url.startsWith('node:') || f.fn === '(program)'],
];
const STEPS = [...CAPTURING, ...LOCAL];

function steps(profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children || []) parent.set(c, n.id);
  const stepOf = new Map();
  const classify = (id) => {
    if (stepOf.has(id)) return stepOf.get(id);
    const frames = [];
    for (let at = id; at !== undefined; at = parent.get(at)) {
      const cf = byId.get(at).callFrame;
      frames.push({ fn: cf.functionName || '(anonymous)', url: cf.url || '', line: cf.lineNumber + 1 });
    }
    let step = 'other';
    if (frames[0].fn === '(idle)') step = '(idle)';
    else {
      const captured = CAPTURING.find(([, test]) => frames.some(test));
      if (captured) step = captured[0];
      else
        for (const f of frames) {
          const local = LOCAL.find(([, test]) => test(f));
          if (local) {
            step = local[0];
            break;
          }
        }
    }
    stepOf.set(id, step);
    return step;
  };
  const us = new Map();
  let busy = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const step = classify(profile.samples[i]);
    const d = profile.timeDeltas[i] || 0;
    if (step === '(idle)' || step === PROFILER) continue;
    busy += d;
    us.set(step, (us.get(step) || 0) + d);
  }
  const order = [...new Set(STEPS.map(([n]) => n))].filter((n) => n !== PROFILER);
  order.push('other');
  return {
    busyUs: busy,
    steps: order.filter((n) => us.has(n)).map((name) => ({ name, us: us.get(name) })),
  };
}

/**
 * A Markdown table of the steps: share of the sampled busy time, sampled µs per request (when
 * `requests` is known: the profiler's clock, which also runs while the process waits for a core),
 * and that share of `measuredUs`, the CPU per request measured from /proc in the unprofiled rounds.
 */
function toMarkdown(result, requests, measuredUs) {
  const lines = [
    '| step | share of sampled time | sampled µs per request | µs per request, share of the measured CPU |',
    '| --- | ---: | ---: | ---: |',
  ];
  const row = (name, us) => {
    const share = us / (result.busyUs || 1);
    const sampled = requests ? (us / requests).toFixed(0) : '-';
    const measured = measuredUs ? (share * measuredUs).toFixed(0) : '-';
    return `| ${name} | ${(100 * share).toFixed(1)}% | ${sampled} | ${measured} |`;
  };
  for (const s of result.steps) lines.push(row(s.name, s.us));
  lines.push(row('**total (main thread)**', result.busyUs));
  return lines.join('\n');
}

module.exports = { steps, toMarkdown };

if (require.main === module) {
  const [file, requests, measuredUs] = process.argv.slice(2);
  if (!file) {
    process.stderr.write(
      'usage: node bench/cpu-profile-steps.js FILE.cpuprofile [requests [measured µs per request]]\n',
    );
    process.exit(2);
  }
  const result = steps(JSON.parse(readFileSync(file, 'utf8')));
  process.stdout.write(
    `${toMarkdown(result, requests ? Number(requests) : undefined, measuredUs ? Number(measuredUs) : undefined)}\n`,
  );
}
