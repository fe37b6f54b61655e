/**
 * The MCP connector's sign-in, as an MCP client does it: the SDK's own client and its OAuth
 * support (discovery from the 401 of /mcp, dynamic registration, PKCE, the token for
 * PUBLIC_URL/mcp), against the BUILT service on a fresh database; the sign-in and consent pages
 * driven like a browser. Also the built-in client of /docs, and the pages' CSP for an app's own
 * redirect scheme. Run: npm run --silent build && node --test test/oauth/
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import {
  authorize,
  callTool,
  consent,
  CookieJar,
  discover,
  ensureBuilt,
  exchangeCode,
  navigate,
  registerClient,
  SCOPES,
  seededDatabase,
  signIn,
  startInstance,
  MemoryOAuthProvider,
} from './support.mjs';

const OWNER = 'ada@acme.test';
const PASSWORD = 'correct horse battery staple';
const REDIRECT = 'http://127.0.0.1:8977/callback'; // never loaded: the test reads the code from the redirect
const CLIENT_NAME = 'SDK test client';

describe('MCP: the SDK client signs in with OAuth and calls a tool', { timeout: 240_000 }, () => {
  let db;
  let instance;
  let base;

  before(async () => {
    ensureBuilt();
    db = await seededDatabase('mcp', {
      workspaces: [{ name: 'Acme', slug: 'acme', plan: 'pro', ownerEmail: OWNER }],
      passwords: { [OWNER]: `${PASSWORD}\n` },
    });
    instance = await startInstance(db.url);
    base = instance.base;
  });

  after(async () => {
    await instance?.stop();
    await db?.drop();
  });

  test('discovery from the 401 of /mcp, registration, PKCE, sign-in and consent, a token for /mcp, then a tool call', async () => {
    const provider = new MemoryOAuthProvider({ redirectUrl: REDIRECT, clientName: CLIENT_NAME });
    const url = new URL(`${base}/mcp`);
    const first = new Client({ name: 'sdk-oauth-test', version: '1.0.0' });
    await assert.rejects(
      first.connect(new StreamableHTTPClientTransport(url, { authProvider: provider })),
      UnauthorizedError,
    );

    // The SDK found the server from /mcp's challenge, registered, and asks for a token for /mcp with PKCE.
    const asked = provider.authorizationUrl;
    assert.ok(asked, 'the client was sent to the authorization endpoint');
    assert.equal(`${asked.origin}${asked.pathname}`, `${base}/oauth/authorize`);
    assert.equal(asked.searchParams.get('resource'), `${base}/mcp`);
    assert.equal(asked.searchParams.get('code_challenge_method'), 'S256');
    assert.equal(asked.searchParams.get('client_id'), provider.saved.client.client_id);

    const jar = new CookieJar();
    const signInPage = await navigate(jar, asked.href, {}, { stopAt: REDIRECT });
    assert.equal(signInPage.status, 200);
    const consentPage = await signIn(jar, signInPage, { email: OWNER, password: PASSWORD });
    assert.equal(consentPage.status, 200);
    const done = await consent(jar, consentPage, { workspace: 'acme', stopAt: REDIRECT });
    assert.ok(done.location?.startsWith(REDIRECT), `consent led back to the client (${done.status} ${done.location})`);

    const transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
    await transport.finishAuth(new URL(done.location).searchParams.get('code'));
    assert.ok(provider.saved.tokens?.access_token, 'the SDK exchanged the code');

    const client = new Client({ name: 'sdk-oauth-test', version: '1.0.0' });
    await client.connect(transport);
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === 'list_forms'));
    const result = await client.callTool({ name: 'list_forms', arguments: {} });
    assert.equal(result.isError, undefined);
    assert.equal(result.structuredContent.total, 0);

    // The same token works on the REST API: one credential for both.
    const accessToken = provider.saved.tokens.access_token;
    const rest = await callTool(base, accessToken, 'list_forms');
    assert.equal(rest.status, 200);

    // Export links made with this token download, over MCP and over REST (they were 404: the link
    // named the token by an expiry that never equalled the stored one, issue 34 item 1.2).
    const made = await callTool(base, accessToken, 'create_form', {
      title: 'Export check',
      blocks: [{ type: 'short_text', title: 'Name', ref: 'name' }],
    });
    assert.equal(made.status, 200, made.text);
    const { publicId } = made.body;
    assert.equal((await callTool(base, accessToken, 'publish_form', { publicId })).status, 200);
    const answered = await callTool(base, accessToken, 'create_response', { publicId, answers: { name: 'Ada' } });
    assert.equal(answered.status, 200, answered.text);
    const exported = await client.callTool({
      name: 'export_responses',
      arguments: { publicId, format: 'ndjson', answersBy: 'ref' },
    });
    assert.equal(exported.isError, undefined);
    const byMcp = await fetch(exported.structuredContent.url);
    assert.equal(byMcp.status, 200, await byMcp.clone().text());
    const lines = (await byMcp.text()).trimEnd().split('\n');
    assert.deepEqual(
      lines.map((l) => JSON.parse(l).answers),
      [{ name: 'Ada' }],
    );
    const byRest = await callTool(base, accessToken, 'export_responses', { publicId });
    assert.equal(byRest.status, 200);
    const csv = await fetch(byRest.body.url);
    assert.equal(csv.status, 200);
    assert.match(await csv.text(), /Ada/);
    await client.close();
  });

  test('/docs "Authorize": the built-in public client signs in with PKCE and its token calls a tool', async () => {
    const found = await discover(base);
    const redirectUri = `${base}/docs/oauth2-redirect.html`;
    const docs = { client_id: 'formwork-api-docs', token_endpoint_auth_method: 'none' };
    const flow = await authorize(found.as, docs, {
      redirectUri,
      scopes: SCOPES,
      resource: undefined,
      email: OWNER,
      password: PASSWORD,
      workspace: 'acme',
    });
    const tokens = await exchangeCode(found.as, docs, flow, { redirectUri });
    assert.equal((await callTool(base, tokens.access_token, 'list_forms')).status, 200);
    const page = await fetch(redirectUri);
    assert.equal(page.status, 200, 'Swagger UI serves its OAuth redirect page');
  });

  test("the sign-in pages allow the final redirect to an app's own scheme (form-action), and only that scheme", async () => {
    const found = await discover(base);
    const redirectUri = 'cursor://anysphere.cursor-retrieval/oauth/user-formwork/callback';
    const client = await registerClient(found.as, { redirectUri, name: 'Cursor' });
    const jar = new CookieJar();
    const asked = new URL(found.as.authorization_endpoint);
    for (const [k, v] of Object.entries({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: redirectUri,
      scope: 'forms:read',
      code_challenge: 'x'.repeat(43),
      code_challenge_method: 'S256',
      state: 's',
    })) {
      asked.searchParams.set(k, v);
    }
    const signInPage = await navigate(jar, asked.href, {}, { stopAt: redirectUri });
    assert.equal(signInPage.status, 200);
    assert.match(signInPage.headers.get('content-security-policy'), /form-action 'self' http: https: cursor:;/);
    const consentPage = await signIn(jar, signInPage, { email: OWNER, password: PASSWORD });
    assert.match(consentPage.headers.get('content-security-policy'), /form-action 'self' http: https: cursor:;/);
    const done = await consent(jar, consentPage, { workspace: 'acme', stopAt: redirectUri });
    assert.ok(done.location?.startsWith(redirectUri), `consent led back to the app (${done.status} ${done.location})`);
  });
});
