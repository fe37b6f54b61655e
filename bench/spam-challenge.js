'use strict';
/**
 * The spam gate's challenge (issue 47, item 5): CPU per submission. Run with
 * `npm run build && node bench/spam-challenge.js` (or BENCH_DIST=<other build's dist>). In-process,
 * no server and no database: the compiled SpamGate, its keys set in memory.
 *
 *  - verify: SpamGate.verify on a solved payload (parse, HMAC of the challenge, HMAC of the derived
 *    key: ALTCHA v2's deterministic mode), the CPU a post with a solution costs before its
 *    single-use claim (one INSERT into settings_once, not measured here);
 *  - baseline, in the same run: the page state's check every multi-page post already pays
 *    (HMAC-SHA256 of a 1 KB state, as PageStateSigner.verify);
 *  - challenge: SpamGate.challenge (the server's PBKDF2 of the known counter) per page that asks;
 *  - solve: what the work costs a client without workers (altcha-lib's solveChallenge, in Node), for scale.
 *
 * Env: BENCH_VERIFY_OPS (5000), BENCH_ROUNDS (5), BENCH_SOLVES (10). Prints a Markdown report.
 * CPU is this process's (process.cpuUsage), per call, median of the rounds; verify and baseline alternate.
 */
const { join } = require('node:path');
const { createHmac, randomBytes } = require('node:crypto');
const { solveChallenge } = require('altcha-lib');
const { deriveKey } = require('altcha-lib/algorithms/pbkdf2');

const DIST = process.env.BENCH_DIST ? join(process.env.BENCH_DIST, 'src') : join(__dirname, '..', 'dist', 'src');
const { SpamGate } = require(join(DIST, 'access', 'spam', 'spam-gate.service.js'));
const num = (name, d) => Number(process.env[name] ?? d);
const OPS = num('BENCH_VERIFY_OPS', 5000);
const ROUNDS = num('BENCH_ROUNDS', 5);
const SOLVES = num('BENCH_SOLVES', 10);

const cpuUs = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function perCall(n, fn) {
  const start = cpuUs();
  for (let i = 0; i < n; i++) await fn(i);
  return (cpuUs() - start) / n;
}

async function main() {
  const gate = new SpamGate(undefined, undefined, undefined, { spam: { minFillMs: 0 } });
  gate.keys = Promise.resolve({
    challenge: randomBytes(32).toString('base64url'),
    key: randomBytes(32).toString('base64url'),
  });
  const form = { id: '0190b6f2-7c1e-7a00-8000-000000000001', spamProtection: 'always' };

  const payloads = [];
  const solveCpu = [];
  for (let i = 0; i < SOLVES; i++) {
    const challenge = await gate.challenge(form);
    const start = cpuUs();
    const solution = await solveChallenge({ challenge, deriveKey });
    solveCpu.push(cpuUs() - start);
    payloads.push(Buffer.from(JSON.stringify({ challenge, solution })).toString('base64'));
  }
  for (const p of payloads) if (!(await gate.verify(form, p))) throw new Error('a solved payload did not verify');

  const stateKey = randomBytes(32);
  const state = Buffer.from(JSON.stringify({ a: 'x'.repeat(900) })).toString('base64url');
  const mac = createHmac('sha256', stateKey).update(state).digest('base64url');
  const verify = [];
  const baseline = [];
  const challenge = [];
  for (let r = 0; r < ROUNDS; r++) {
    verify.push(await perCall(OPS, (i) => gate.verify(form, payloads[i % payloads.length])));
    baseline.push(
      await perCall(OPS, () => {
        if (createHmac('sha256', stateKey).update(state).digest('base64url') !== mac) throw new Error('mac');
      }),
    );
    challenge.push(await perCall(Math.max(50, OPS / 50), () => gate.challenge(form)));
  }
  const v = median(verify);
  const b = median(baseline);
  const lines = [
    '# Spam gate: challenge CPU per submission',
    '',
    `Node ${process.version}, ${ROUNDS} rounds of ${OPS} verifications (median of rounds), ${SOLVES} distinct solved payloads.`,
    '',
    '| what | CPU per call |',
    '| --- | --- |',
    `| verify a solution (SpamGate.verify) | ${v.toFixed(1)} µs |`,
    `| baseline: the page state's HMAC check | ${b.toFixed(1)} µs |`,
    `| ratio verify / baseline | ${(v / b).toFixed(2)}x |`,
    `| issue a challenge (SpamGate.challenge) | ${median(challenge).toFixed(1)} µs |`,
    `| solve one in Node, one thread (client's work, for scale) | ${(median(solveCpu) / 1000).toFixed(0)} ms |`,
  ];
  console.log(lines.join('\n'));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
