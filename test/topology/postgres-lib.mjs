/**
 * Helpers of the PostgreSQL topology tests (postgres*.test.mjs), on support.mjs (the run's state,
 * requests through nginx from an address of their own, tokens made with the CLI): a client with
 * budgets of its own, a form, the filtered read and the export of the long-read path, and the
 * fault controls of scripts/topology/postgres.js.
 */
import { callTool, cli, clientAddress, request, require, state } from './support.mjs';

export { clientAddress };
export const faults = require('../../scripts/topology/postgres.js');
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function topology() {
  if (!state.postgres) throw new Error('the topology state holds no postgres state (scripts/topology/postgres.js)');
  return state;
}

/**
 * A client of its own: a token (its credential budget) and a loopback address (its IP budget),
 * so that one test's load never spends another's budgets. Tokens are made one after the other
 * (the CLI, as an operator would).
 */
export function client() {
  const { token } = cli(
    'token',
    'create',
    '--workspace',
    state.workspace,
    '--name',
    `pg-${Date.now()}`,
    '--role',
    'admin',
  );
  return { token, from: clientAddress() };
}

/** POST /api/v1/tools/{tool} through nginx: { status, headers (lower-case names), body }. */
export async function call(who, tool, args, headers = {}) {
  const res = await callTool(who.token, tool, args, { headers, from: who.from });
  return { status: res.status, headers: res.headers, body: res.json ?? res.text };
}

/** A form with one short text (ref "name") and one choice (ref "colour"), published. */
export async function makeForm(who) {
  const made = await call(who, 'create_form', {
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
export async function redTotal(who, publicId) {
  const res = await call(who, 'list_responses', {
    publicId,
    answersBy: 'ref',
    where: { block: 'colour', op: 'equals', value: 'Red' },
    limit: 1,
  });
  if (res.status !== 200) throw new Error(`list_responses: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.total;
}

/** The records of a full CSV export of the form (its header left out). */
export async function exportLines(who, publicId, where) {
  const link = await call(who, 'export_responses', { publicId, ...(where ? { where } : {}) });
  if (link.status !== 200) throw new Error(`export_responses: ${link.status} ${JSON.stringify(link.body)}`);
  const res = await request(new URL(link.body.url).pathname + new URL(link.body.url).search, { from: who.from });
  if (res.status !== 200) throw new Error(`export download: ${res.status}`);
  return res.text.split('\r\n').filter(Boolean).slice(1);
}

export async function readyz() {
  const res = await request('/readyz');
  return { status: res.status, body: res.json };
}
