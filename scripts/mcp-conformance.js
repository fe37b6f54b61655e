'use strict';
/**
 * MCP's official conformance suite (@modelcontextprotocol/conformance, the 0.2.0 line with the frozen
 * 2026-07-28 requirements) against /mcp of a built Formwork, with a token: `npm run
 * test:mcp-conformance` (builds first). Fails (exit 1) when any scenario fails.
 *
 * 1. a fresh embedded database in a temporary DATA_DIR: the CLI migrates it and makes the demo
 *    workspace and its admin token;
 * 2. starts dist/src/main.js on it (PUBLIC_URL http://127.0.0.1:<port>, budgets raised so that the
 *    suite's requests are counted, never refused);
 * 3. the suite has no option for a credential, so it talks to a small proxy on loopback that adds
 *    `Authorization: Bearer <token>` to each request and passes everything else (Host and Origin
 *    included) through unchanged;
 * 4. runs the scenarios that apply to a tools-only server, each at the wire of its revision, with
 *    the baseline scripts/mcp-conformance-baseline.yml: the four checks of server-stateless that
 *    call the suite's own diagnostic tools (which no real server lists) may fail, no other.
 * MCP_CONFORMANCE_SCENARIO=<name> runs only that scenario (at each revision that has it).
 *
 * The suite needs Node 22 or newer (fs.globSync): run this with Node 24 on PATH (as .ci/run does), or
 * it uses the Node 24 that .ci/run installs into ~/.cache/formwork-node24. So that Formwork's own
 * `npm ci` (Node 20.19 and newer) neither installs it nor warns about its engines, the suite has
 * its own package.json and lockfile in scripts/mcp-conformance/, installed there (`npm ci
 * --prefix scripts/mcp-conformance`) by this script when it is missing or its lockfile changed.
 */
const { spawn, spawnSync } = require('node:child_process');
const { randomBytes } = require('node:crypto');
const { existsSync, mkdtempSync, rmSync, statSync } = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const os = require('node:os');
const { join } = require('node:path');

const ROOT = join(__dirname, '..');
const MAIN = join(ROOT, 'dist/src/main.js');
const CLI = join(ROOT, 'dist/src/cli/main.js');
/** The suite's own install (its package.json and lockfile), apart from Formwork's node_modules. */
const SUITE_DIR = join(__dirname, 'mcp-conformance');
const SUITE = join(SUITE_DIR, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
/** The checks that need the suite's own fixture tools (see the file). */
const BASELINE = join(__dirname, 'mcp-conformance-baseline.yml');

/** The scenarios of issue 24: those of the suite that a server of tools alone can pass. */
const ONLY = process.env.MCP_CONFORMANCE_SCENARIO;
const SCENARIOS = [
  ['2025-11-25', 'server-initialize'],
  ['2025-11-25', 'ping'],
  ['2025-11-25', 'tools-list'],
  ['2025-11-25', 'dns-rebinding-protection'],
  ['2026-07-28', 'server-stateless'],
  ['2026-07-28', 'tools-list'],
  ['2026-07-28', 'dns-rebinding-protection'],
  ['2026-07-28', 'caching'],
  ['2026-07-28', 'http-header-validation'],
];

const log = (msg) => console.log(`[mcp-conformance] ${msg}`);

/** A Node of 22 or newer for the suite: this one, or the one .ci/run installs. */
function suiteNode() {
  if (Number(process.versions.node.split('.')[0]) >= 22) return process.execPath;
  const arch = process.arch === 'arm64' ? 'arm64' : 'x64';
  const cached = join(os.homedir(), '.cache/formwork-node24/node_modules', `node-linux-${arch}`, 'bin/node');
  if (existsSync(cached)) return cached;
  throw new Error(
    `the conformance suite needs Node 22 or newer (this is ${process.version}); run with Node 24 on PATH, or run .ci/run once to install it into ~/.cache/formwork-node24`,
  );
}

/** Installs the suite from its lockfile, with `node`'s npm, unless the install is newer than the lockfile. */
function installSuite(node) {
  const installed = join(SUITE_DIR, 'node_modules/.package-lock.json');
  const lock = join(SUITE_DIR, 'package-lock.json');
  if (existsSync(SUITE) && existsSync(installed) && statSync(installed).mtimeMs >= statSync(lock).mtimeMs) return;
  log(`installing the suite into ${SUITE_DIR} (npm ci)`);
  const run = spawnSync('npm', ['ci', '--prefix', SUITE_DIR, '--no-audit', '--no-fund'], {
    cwd: ROOT,
    stdio: 'inherit',
    // The suite's Node first on PATH: npm runs on it, and checks the suite's engines against it.
    env: { ...process.env, PATH: `${join(node, '..')}:${process.env.PATH ?? ''}` },
  });
  if (run.status !== 0) throw new Error(`npm ci --prefix ${SUITE_DIR} failed (${run.status ?? run.signal})`);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** The environment of the service and its CLI: production, quiet, the temporary embedded database. */
function serviceEnv(dataDir, port) {
  const env = { ...process.env };
  for (const k of Object.keys(env)) {
    if (/^(DATABASE_URL|REDIS_URL|PUBLIC_URL|MCP_ALLOWED_ORIGINS|TRUST_PROXY|RATE_LIMIT_.*|NODE_OPTIONS)$/.test(k)) {
      delete env[k];
    }
  }
  return {
    ...env,
    DATA_DIR: dataDir,
    PORT: String(port),
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    NODE_ENV: 'production',
    // Production refuses to start without it; a fresh one, as the database is.
    WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64'),
    LOG_LEVEL: 'warn',
    BOOTSTRAP_DEMO: 'false',
    RATE_LIMIT_CREDENTIAL_PER_MIN: '100000',
    RATE_LIMIT_IP_PER_MIN: '100000',
  };
}

/** The demo workspace's admin token, made by the CLI on the fresh database (which it migrates). */
function demoToken(env) {
  for (const args of [
    ['migrate', '--json'],
    ['demo', '--json'],
  ]) {
    const run = spawnSync(process.execPath, [CLI, ...args], { cwd: ROOT, env, encoding: 'utf8', timeout: 120_000 });
    if (run.status !== 0) throw new Error(`cli ${args[0]} failed (${run.status}): ${run.stderr || run.stdout}`);
    if (args[0] === 'demo') return JSON.parse(run.stdout).token;
  }
  return undefined;
}

/** Waits until Formwork answers /readyz (or fails when it exits first). */
async function waitReady(port, proc, output) {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`formwork exited (${proc.exitCode}):\n${output()}`);
    try {
      if ((await fetch(`http://127.0.0.1:${port}/readyz`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`formwork did not answer /readyz within 60 s:\n${output()}`);
}

/** A proxy on loopback that adds the bearer token to each request and changes nothing else. */
function startProxy(target, token) {
  const server = http.createServer((req, res) => {
    const headers = { ...req.headers, authorization: `Bearer ${token}` };
    const upstream = http.request(
      { host: '127.0.0.1', port: target, method: req.method, path: req.url, headers },
      (answer) => {
        res.writeHead(answer.statusCode, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', (err) => {
      res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`proxy: ${err.message}`);
    });
    req.pipe(upstream);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

function runScenario(node, url, revision, scenario) {
  return new Promise((resolve) => {
    const outputDir = mkdtempSync(join(os.tmpdir(), 'mcp-conformance-results-'));
    const proc = spawn(
      node,
      [
        SUITE,
        'server',
        '--url',
        url,
        '--scenario',
        scenario,
        '--spec-version',
        revision,
        '--expected-failures',
        BASELINE,
        '-o',
        outputDir,
      ],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    proc.stdout.on('data', (d) => (output += d));
    proc.stderr.on('data', (d) => (output += d));
    proc.on('close', (code) => {
      rmSync(outputDir, { recursive: true, force: true });
      resolve({ revision, scenario, passed: code === 0, output });
    });
  });
}

async function main() {
  for (const file of [MAIN, CLI]) {
    if (!existsSync(file))
      throw new Error(`${file} is missing: run npm run build first (npm run test:mcp-conformance does)`);
  }
  const node = suiteNode();
  installSuite(node);
  const dataDir = mkdtempSync(join(os.tmpdir(), 'formwork-mcp-conformance-'));
  const port = await freePort();
  const env = serviceEnv(dataDir, port);
  let formwork;
  let proxy;
  try {
    log(`fresh embedded database in ${dataDir}`);
    const token = demoToken(env);
    let output = '';
    formwork = spawn(process.execPath, [MAIN], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    formwork.stdout.on('data', (d) => (output = (output + d).slice(-8000)));
    formwork.stderr.on('data', (d) => (output = (output + d).slice(-8000)));
    await waitReady(port, formwork, () => output);
    proxy = await startProxy(port, token);
    const url = `http://127.0.0.1:${proxy.address().port}/mcp`;
    log(`formwork on 127.0.0.1:${port}; the suite (${node}) talks to ${url} (adds the token)`);
    const results = [];
    for (const [revision, scenario] of SCENARIOS.filter(([, s]) => !ONLY || s === ONLY)) {
      const result = await runScenario(node, url, revision, scenario);
      results.push(result);
      log(`${result.passed ? 'PASS' : 'FAIL'} ${revision} ${scenario}`);
      if (!result.passed) console.log(result.output.trim().split('\n').slice(-200).join('\n'));
    }
    const failed = results.filter((r) => !r.passed).length;
    console.log(`${results.length - failed} passed, ${failed} failed`);
    if (failed) process.exitCode = 1;
  } finally {
    proxy?.close();
    if (formwork && formwork.exitCode === null) {
      formwork.kill('SIGTERM');
      await new Promise((r) => formwork.once('exit', r));
    }
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(`[mcp-conformance] ${err.stack || err}`);
  process.exit(1);
});
