/**
 * What every topology test needs (issue 37): the state the run wrote (TOPOLOGY_STATE), requests
 * through nginx from a client address of their own, the service's CLI, and a load that records
 * every answer. Run by `npm run test:topology` (scripts/topology/run.js), never alone.
 */
import { execFile, spawnSync } from 'node:child_process';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';

if (!process.env.TOPOLOGY_STATE) {
  throw new Error(
    'The topology tests run inside `npm run test:topology`, which starts what they test and sets TOPOLOGY_STATE',
  );
}
const stateFile = process.env.TOPOLOGY_STATE;
export const state = JSON.parse(readFileSync(stateFile, 'utf8'));
export const require = createRequire(import.meta.url);
export const redisCluster = require(path.join(state.root, 'scripts', 'topology', 'redis-cluster.js'));
export const processes = require(path.join(state.root, 'scripts', 'topology', 'instances.js'));
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Saves the state after a test restarted a process, so that the run stops the new one at the end. */
export function saveState() {
  writeFileSync(stateFile, JSON.stringify(state, null, 2));
}

/** A loopback address of its own (Linux routes all of 127/8 to lo): its own IP budget. */
export function clientAddress() {
  const b = () => 1 + Math.floor(Math.random() * 254);
  return `127.${b()}.${b()}.${b()}`;
}

/** The address of requests that pick none: one per test file. */
const defaultAddress = clientAddress();
const agents = new Map();
function agentFor(from) {
  let agent = agents.get(from);
  if (!agent) {
    agent = new http.Agent({ keepAlive: true, maxSockets: 32, localAddress: from });
    agents.set(from, agent);
  }
  return agent;
}
export function closeAgents() {
  for (const a of agents.values()) a.destroy();
  agents.clear();
}

/**
 * One request to `port` (nginx by default); never rejects: a network error is status 0 with the
 * error's text, so that a load can count it.
 */
export function request(urlPath, { method, headers = {}, body, from, port } = {}) {
  const url = new URL(state.url);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve) => {
    const req = http.request(
      {
        host: url.hostname,
        port: port ?? url.port,
        path: urlPath,
        method: method ?? (payload ? 'POST' : 'GET'),
        agent: agentFor(from ?? defaultAddress),
        headers: {
          ...(payload ? { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload) } : {}),
          ...headers,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () => {
          let json;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode, headers: res.headers, text, json });
        });
        res.on('error', (err) => resolve({ status: 0, headers: {}, text: err.message }));
      },
    );
    req.on('error', (err) => resolve({ status: 0, headers: {}, text: err.message }));
    if (payload) req.write(payload);
    req.end();
  });
}
export function callTool(token, tool, body, { headers = {}, from, port } = {}) {
  return request(`/api/v1/tools/${tool}`, {
    body,
    from,
    port,
    headers: { Authorization: `Bearer ${token}`, ...headers },
  });
}

/** The built service's CLI, with the instances' settings; its --json answer. */
export function cli(...args) {
  const r = spawnSync(
    process.execPath,
    [path.join(state.dist ?? path.join(state.root, 'dist'), 'src', 'cli', 'main.js'), ...args, '--json'],
    {
      cwd: state.root,
      env: { PATH: process.env.PATH ?? '', ...state.env },
      encoding: 'utf8',
    },
  );
  if (r.status !== 0) throw new Error(`formwork ${args.join(' ')} failed: ${r.stderr || r.stdout}`);
  return JSON.parse(r.stdout);
}

/**
 * Fresh tokens of the run's workspace (each its own credential budget), one CLI run each, one at a
 * time (a CLI run once hung without a connection when eight ran at once on a loaded machine: the
 * timeout then says so rather than holding the run up).
 */
export async function newTokens(n, role = 'admin') {
  const one = (i) =>
    new Promise((resolve, reject) => {
      const args = ['token', 'create', '--workspace', state.workspace, '--name', `t${Date.now()}-${i}`, '--role', role];
      execFile(
        process.execPath,
        [path.join(state.dist ?? path.join(state.root, 'dist'), 'src', 'cli', 'main.js'), ...args, '--json'],
        { cwd: state.root, env: { PATH: process.env.PATH ?? '', ...state.env }, timeout: 60_000 },
        (err, stdout, stderr) =>
          err
            ? reject(new Error(`formwork token create failed: ${err.message} ${stderr}`))
            : resolve(JSON.parse(stdout).token),
      );
    });
  const tokens = [];
  for (let i = 0; i < n; i++) tokens.push(await one(i));
  return tokens;
}

/** A fresh token of the run's workspace (its own credential budget). */
export async function newToken(role = 'admin') {
  return (await newTokens(1, role))[0];
}

/** Counts answers by status: { 200: 118, 429: 2 }. */
export function statuses(answers) {
  const counts = {};
  for (const a of answers) counts[a.status] = (counts[a.status] ?? 0) + 1;
  return counts;
}

/** Which instances answered (nginx's X-Upstream). */
export function upstreams(answers) {
  return new Set(answers.map((a) => a.headers['x-upstream']).filter(Boolean));
}

/**
 * Runs `send(i)` with `concurrency` requests in flight until `until()` says stop; every answer
 * kept with when it was sent.
 */
export async function load({ send, concurrency = 8, until }) {
  const answers = [];
  let i = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (!until()) {
        const n = i++;
        const at = Date.now();
        const answer = await send(n);
        answers.push({ ...answer, n, at, took: Date.now() - at });
      }
    }),
  );
  return answers;
}

/** A published form with one short-text question: its publicId and the question's id. */
export async function publishedForm(token, title = 'Topology') {
  const created = await callTool(token, 'create_form', { title, blocks: [{ type: 'short_text', title: 'Name' }] });
  assert.equal(created.status, 200, created.text);
  const published = await callTool(token, 'publish_form', { publicId: created.json.publicId });
  assert.equal(published.status, 200, published.text);
  return { publicId: created.json.publicId, block: created.json.blocks[0].id };
}
