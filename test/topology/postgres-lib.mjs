/**
 * Helpers of the PostgreSQL topology tests (postgres*.test.mjs): the run's state (TOPOLOGY_STATE,
 * written by scripts/topology/run.js), a workspace and token of their own made with the CLI (on
 * DATABASE_DIRECT_URL), tool calls through the load balancer, and the fault controls of
 * scripts/topology/postgres.js.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..', '..');
export const faults = createRequire(import.meta.url)('../../scripts/topology/postgres.js');

export function topology() {
  const path = process.env.TOPOLOGY_STATE;
  if (!path) throw new Error('TOPOLOGY_STATE is not set: run these tests with npm run test:topology');
  const state = JSON.parse(readFileSync(path, 'utf8'));
  if (!state.postgres) throw new Error(`${path} holds no postgres state (scripts/topology/postgres.js)`);
  return state;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A Pro workspace and an admin token of its own (the CLI, as an operator would). */
export function workspaceToken(state, label) {
  const cli = (...args) => {
    const r = spawnSync(
      process.execPath,
      [join(state.dist ?? join(ROOT, 'dist'), 'src/cli/main.js'), ...args, '--json'],
      {
        env: { ...process.env, ...state.env },
        encoding: 'utf8',
      },
    );
    if (r.status !== 0) throw new Error(`cli ${args.join(' ')}: ${r.stdout}${r.stderr}`);
    return JSON.parse(r.stdout);
  };
  const slug = `${label}-${Date.now().toString(36)}-${Math.floor(Math.random() * 1e6)}`;
  cli('workspace', 'create', '--name', slug, '--slug', slug, '--plan', 'pro', '--owner-email', `${slug}@example.com`);
  return cli('token', 'create', '--workspace', slug, '--name', 'topology').token;
}

/** POST /api/v1/tools/{tool} through the load balancer: { status, headers, body }. */
export async function call(state, token, tool, args, headers = {}) {
  const res = await fetch(`${state.url}/api/v1/tools/${tool}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(args),
  });
  const text = await res.text();
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: res.status, headers: res.headers, body };
}

/** A form with one short text (ref "name") and one choice (ref "colour"), published. */
export async function makeForm(state, token) {
  const made = await call(state, token, 'create_form', {
    title: 'Topology',
    blocks: [
      { type: 'short_text', title: 'Name', ref: 'name' },
      { type: 'multiple_choice', title: 'Colour', ref: 'colour', choices: ['Red', 'Blue'] },
    ],
  });
  if (made.status !== 200 && made.status !== 201)
    throw new Error(`create_form: ${made.status} ${JSON.stringify(made.body)}`);
  return made.body.publicId;
}

export const answer = (name, colour = 'Red') => ({ name, colour });

/** The filtered read of the long-read path (the replica's): total and ids of responses with colour = Red. */
export async function redTotal(state, token, publicId) {
  const res = await call(state, token, 'list_responses', {
    publicId,
    answersBy: 'ref',
    where: { block: 'colour', op: 'equals', value: 'Red' },
    limit: 1,
  });
  if (res.status !== 200) throw new Error(`list_responses: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.total;
}

/** The records of a full CSV export of the form (its header left out). */
export async function exportLines(state, token, publicId, where) {
  const link = await call(state, token, 'export_responses', { publicId, ...(where ? { where } : {}) });
  if (link.status !== 200) throw new Error(`export_responses: ${link.status} ${JSON.stringify(link.body)}`);
  const res = await fetch(link.body.url.replace(/^https?:\/\/[^/]+/, state.url));
  if (res.status !== 200) throw new Error(`export download: ${res.status}`);
  return (await res.text()).split('\r\n').filter(Boolean).slice(1);
}

export async function readyz(state) {
  const res = await fetch(`${state.url}/readyz`);
  return { status: res.status, body: await res.json() };
}
