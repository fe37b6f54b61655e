/**
 * Real MCP clients against the BUILT service (issue 24 item 5), each from the 401 of /mcp through
 * OAuth to a tool call, with the SDK's own OAuth client support (protected resource metadata from
 * the 401's WWW-Authenticate, authorization server metadata, PKCE, the token exchange):
 * - the v2 SDK client (@modelcontextprotocol/client) pinned to 2026-07-28 (stateless: no
 *   initialize), identifying itself with a Client ID Metadata Document: its client_id is an https
 *   URL served by a local HTTPS server started here (OAUTH_CIMD_ALLOW_PRIVATE_URLS, as it is on
 *   loopback; the service trusts its certificate through NODE_EXTRA_CA_CERTS);
 * - the 1.x SDK client (@modelcontextprotocol/sdk) on 2025-11-25 (initialize), registering itself
 *   (dynamic client registration).
 * The person signing in and consenting is driven like a browser (forms and redirects over HTTP).
 * Run: npm run --silent build && node --test test/oauth/mcp-clients.test.mjs
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  Client as ClientV2,
  StreamableHTTPClientTransport as TransportV2,
  UnauthorizedError as UnauthorizedV2,
} from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError as UnauthorizedV1 } from '@modelcontextprotocol/sdk/client/auth.js';
import pg from 'pg';
import {
  consent,
  CookieJar,
  ensureBuilt,
  navigate,
  seededDatabase,
  signIn,
  startDocumentServer,
  startInstance,
  MemoryOAuthProvider,
} from './support.mjs';

const OWNER = 'ada@acme.test';
const PASSWORD = 'correct horse battery staple';
// Never loaded: the test reads the code from the redirect. Loopback, so any port would match.
const REDIRECT = 'http://127.0.0.1:8978/callback';
const CLIENT_NAME = 'MCP client test';

/**
 * A fetch that records what each POST to /mcp carried (the protocol header and the JSON-RPC
 * method). The 1.x client also tries to open a GET stream, answered 405 (none is served): not recorded.
 */
function recordingFetch(log) {
  return async (url, init = {}) => {
    const headers = new Headers(init.headers);
    let method;
    try {
      method = JSON.parse(init.body).method;
    } catch {
      method = undefined;
    }
    const res = await fetch(url, init);
    if (new URL(url).pathname === '/mcp' && init.method === 'POST')
      log.push({
        method,
        status: res.status,
        protocolVersion: headers.get('mcp-protocol-version'),
        mcpMethod: headers.get('mcp-method'),
        bearer: (headers.get('authorization') ?? '').startsWith('Bearer '),
      });
    return res;
  };
}

describe('Real MCP clients: from the 401 of /mcp through OAuth to a tool call', { timeout: 240_000 }, () => {
  let db;
  let instance;
  let base;
  let documents;
  /** What each era answered, compared at the end: the same tools, the same result. */
  const answers = {};

  /** The person's part: the authorization URL the SDK asked for, sign-in, consent; the redirect back. */
  async function signInAndConsent(authorizationUrl) {
    const jar = new CookieJar();
    const signInPage = await navigate(jar, authorizationUrl.href, {}, { stopAt: REDIRECT });
    assert.equal(signInPage.status, 200, `the sign-in page (${signInPage.url})`);
    const consentPage = await signIn(jar, signInPage, { email: OWNER, password: PASSWORD });
    assert.equal(consentPage.status, 200, `the consent page (${consentPage.url})`);
    const done = await consent(jar, consentPage, { workspace: 'acme', stopAt: REDIRECT });
    assert.ok(done.location?.startsWith(REDIRECT), `consent led back to the client (${done.status} ${done.location})`);
    return { consentPage, callback: new URL(done.location) };
  }

  async function query(sql, params) {
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      return (await c.query(sql, params)).rows;
    } finally {
      await c.end();
    }
  }

  before(async () => {
    ensureBuilt();
    documents = await startDocumentServer();
    db = await seededDatabase('mcpclients', {
      workspaces: [{ name: 'Acme', slug: 'acme', plan: 'pro', ownerEmail: OWNER }],
      passwords: { [OWNER]: PASSWORD },
    });
    instance = await startInstance(db.url, {
      env: { OAUTH_CIMD_ALLOW_PRIVATE_URLS: 'true', NODE_EXTRA_CA_CERTS: documents.caFile },
    });
    base = instance.base;
  });

  after(async () => {
    await instance?.stop();
    await db?.drop();
    await documents?.close();
  });

  test('the v2 SDK client on 2026-07-28 with a CIMD client_id: 401, discovery, PKCE, consent, token, tools/call', async () => {
    const clientId = documents.serve('/mcp-client/client.json', {
      client_id: `${documents.origin}/mcp-client/client.json`,
      client_name: 'SDK v2 agent',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    });
    const provider = new MemoryOAuthProvider({
      redirectUrl: REDIRECT,
      clientName: CLIENT_NAME,
      clientMetadataUrl: clientId,
    });
    const url = new URL(`${base}/mcp`);
    const log = [];
    const options = { versionNegotiation: { mode: { pin: '2026-07-28' } } };
    const transportOptions = { authProvider: provider, fetch: recordingFetch(log) };

    const first = new ClientV2({ name: 'sdk-v2-oauth-test', version: '1.0.0' }, options);
    await assert.rejects(first.connect(new TransportV2(url, transportOptions)), UnauthorizedV2);
    // The first request was the 2026 probe, refused with 401 before any handshake.
    assert.deepEqual(log[0], {
      method: 'server/discover',
      status: 401,
      protocolVersion: '2026-07-28',
      mcpMethod: 'server/discover',
      bearer: false,
    });

    // No registration: the client_id is the document's URL, and the token is asked for /mcp with PKCE.
    const asked = provider.authorizationUrl;
    assert.ok(asked, 'the client was sent to the authorization endpoint');
    assert.equal(`${asked.origin}${asked.pathname}`, `${base}/oauth/authorize`);
    assert.equal(asked.searchParams.get('client_id'), clientId);
    assert.equal(asked.searchParams.get('resource'), `${base}/mcp`);
    assert.equal(asked.searchParams.get('code_challenge_method'), 'S256');
    assert.equal(provider.saved.client.client_id, clientId);

    const { consentPage, callback } = await signInAndConsent(asked);
    assert.match(consentPage.text, /SDK v2 agent \(from 127\.0\.0\.1:\d+\)/);
    assert.equal(callback.searchParams.get('iss'), base); // RFC 9207, which the SDK checks

    const transport = new TransportV2(url, transportOptions);
    await transport.finishAuth(callback.searchParams);
    assert.ok(provider.saved.tokens?.access_token, 'the SDK exchanged the code');
    assert.ok(provider.saved.tokens.refresh_token, 'and got a refresh token');

    const client = new ClientV2({ name: 'sdk-v2-oauth-test', version: '1.0.0' }, options);
    const sent = log.length;
    await client.connect(transport);
    assert.equal(client.getProtocolEra(), 'modern');
    assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
    const { tools } = await client.listTools();
    const result = await client.callTool({ name: 'list_forms', arguments: {} });
    await client.close();

    assert.equal(result.isError, undefined);
    assert.equal(result.structuredContent.total, 0);
    // Stateless: discover, list, call, each with the bearer token and the 2026 headers; no initialize.
    assert.deepEqual(
      log.slice(sent).map((r) => [r.method, r.status, r.protocolVersion, r.mcpMethod, r.bearer]),
      [
        ['server/discover', 200, '2026-07-28', 'server/discover', true],
        ['tools/list', 200, '2026-07-28', 'tools/list', true],
        ['tools/call', 200, '2026-07-28', 'tools/call', true],
      ],
    );
    // The service read the document (once: max-age=300) and the grant is the document's client.
    assert.equal(documents.fetched.get('/mcp-client/client.json'), 1);
    const grants = await query('SELECT client_id FROM oauth_grants WHERE client_id = $1', [clientId]);
    assert.equal(grants.length, 1);
    answers.modern = { tools, result };
  });

  test('the 1.x SDK client on 2025-11-25 with dynamic registration: 401, discovery, registration, PKCE, consent, token, tools/call', async () => {
    const provider = new MemoryOAuthProvider({ redirectUrl: REDIRECT, clientName: CLIENT_NAME });
    const url = new URL(`${base}/mcp`);
    const log = [];
    const transportOptions = { authProvider: provider, fetch: recordingFetch(log) };

    const first = new ClientV1({ name: 'sdk-v1-oauth-test', version: '1.0.0' });
    await assert.rejects(first.connect(new TransportV1(url, transportOptions)), UnauthorizedV1);
    assert.deepEqual(
      [log[0].method, log[0].status, log[0].bearer],
      ['initialize', 401, false],
      'the handshake was refused with 401',
    );

    // The SDK registered (RFC 7591): a client id of the server's, not a URL.
    const registered = provider.saved.client;
    assert.ok(registered?.client_id && !registered.client_id.startsWith('https://'), JSON.stringify(registered));
    const asked = provider.authorizationUrl;
    assert.equal(`${asked.origin}${asked.pathname}`, `${base}/oauth/authorize`);
    assert.equal(asked.searchParams.get('client_id'), registered.client_id);
    assert.equal(asked.searchParams.get('resource'), `${base}/mcp`);
    assert.equal(asked.searchParams.get('code_challenge_method'), 'S256');

    const { consentPage, callback } = await signInAndConsent(asked);
    assert.match(consentPage.text, /MCP client test/);
    const transport = new TransportV1(url, transportOptions);
    await transport.finishAuth(callback.searchParams.get('code'));
    assert.ok(provider.saved.tokens?.access_token, 'the SDK exchanged the code');

    const client = new ClientV1({ name: 'sdk-v1-oauth-test', version: '1.0.0' });
    const sent = log.length;
    await client.connect(transport);
    assert.equal(transport.protocolVersion, '2025-11-25');
    const { tools } = await client.listTools();
    const result = await client.callTool({ name: 'list_forms', arguments: {} });
    await client.close();

    assert.equal(result.isError, undefined);
    assert.equal(result.structuredContent.total, 0);
    assert.deepEqual(
      log.slice(sent).map((r) => [r.method, r.status, r.bearer]),
      [
        ['initialize', 200, true],
        ['notifications/initialized', 202, true],
        ['tools/list', 200, true],
        ['tools/call', 200, true],
      ],
    );
    assert.equal(log.at(-1).protocolVersion, '2025-11-25');
    const grants = await query('SELECT client_id FROM oauth_grants WHERE client_id = $1', [registered.client_id]);
    assert.equal(grants.length, 1);
    answers.legacy = { tools, result };
  });

  test('both eras list the same tools in the same order and answer the tool call alike', () => {
    assert.ok(answers.modern && answers.legacy, 'both clients connected');
    assert.deepEqual(answers.modern.tools, answers.legacy.tools);
    assert.ok(answers.modern.tools.some((t) => t.name === 'list_forms'));
    assert.deepEqual(answers.modern.result.structuredContent, answers.legacy.result.structuredContent);
    assert.deepEqual(answers.modern.result.content, answers.legacy.result.content);
  });
});
