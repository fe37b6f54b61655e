/**
 * Client ID Metadata Documents (CIMD) at the authorization server, against the BUILT service: a
 * client_id that is an https URL is read from a local HTTPS server on loopback (startDocumentServer: a self-signed
 * certificate, trusted by the service through NODE_EXTRA_CA_CERTS; loopback allowed by
 * OAUTH_CIMD_ALLOW_PRIVATE_URLS, a test-only setting). Also: the metadata advertises CIMD and names
 * every endpoint from PUBLIC_URL, authorization responses carry iss (RFC 9207), loopback redirect
 * URIs match on any port (RFC 8252 §7.3), and dynamic registration keeps working.
 * Run: npm run --silent build && node --test test/oauth/cimd.test.mjs
 */
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import {
  authorizationUrl,
  authorize,
  callTool,
  CookieJar,
  discover,
  ensureBuilt,
  exchangeCode,
  navigate,
  refresh,
  registerClient,
  SCOPES,
  seededDatabase,
  startDocumentServer,
  startInstance,
  textOf,
} from './support.mjs';

const OWNER = 'ada@acme.test';
const PASSWORD = 'correct horse battery staple';
const REGISTERED_REDIRECT = 'http://127.0.0.1:8976/callback';

describe('Client ID Metadata Documents, iss, loopback ports, metadata from PUBLIC_URL', { timeout: 240_000 }, () => {
  let db;
  let instance;
  let base;
  let as;
  let resource;
  let docs; // the HTTPS server of client metadata documents
  let docsOrigin;

  /** Serves `document` (an object, or a raw string) at `path` of the documents server; its client_id URL. */
  const serve = (path, document, options) => docs.serve(path, document, options);

  const agent = (path, extra = {}) => ({
    client_id: `${docsOrigin}${path}`,
    client_name: 'Example Agent',
    redirect_uris: [REGISTERED_REDIRECT],
    ...extra,
  });

  /** The authorization request of `clientId` as a browser follows it: where it stops (a page, or the redirect back). */
  async function startAuthorization(clientId, redirectUri = REGISTERED_REDIRECT, jar = new CookieJar()) {
    const request = await authorizationUrl(as, { client_id: clientId }, { redirectUri, scopes: SCOPES, resource });
    return navigate(jar, request.url.href, {}, { stopAt: redirectUri });
  }

  /** The sign-in, consent and token exchange of a public client. */
  async function connect(clientId, redirectUri) {
    const client = { client_id: clientId, token_endpoint_auth_method: 'none' };
    const flow = await authorize(as, client, {
      redirectUri,
      scopes: SCOPES,
      resource,
      email: OWNER,
      password: PASSWORD,
      workspace: 'acme',
    });
    const tokens = await exchangeCode(as, client, flow, { redirectUri, resource });
    return { client, flow, tokens };
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
    docs = await startDocumentServer();
    docsOrigin = docs.origin;

    db = await seededDatabase('cimd', {
      workspaces: [{ name: 'Acme', slug: 'acme', plan: 'pro', ownerEmail: OWNER }],
      passwords: { [OWNER]: PASSWORD },
    });
    instance = await startInstance(db.url, {
      env: { OAUTH_CIMD_ALLOW_PRIVATE_URLS: 'true', NODE_EXTRA_CA_CERTS: docs.caFile },
    });
    base = instance.base;
    const found = await discover(base);
    as = found.as;
    resource = found.resource;
  });

  after(async () => {
    await instance?.stop();
    await db?.drop();
    await docs?.close();
  });

  test('the metadata advertises client_id_metadata_document_supported, and registration is still offered', () => {
    assert.equal(as.client_id_metadata_document_supported, true);
    assert.equal(as.registration_endpoint, `${base}/oauth/register`);
    assert.equal(as.authorization_response_iss_parameter_supported, true);
  });

  test('the issuer and every endpoint come from PUBLIC_URL, whatever host the metadata is read on', async () => {
    // PUBLIC_URL is http://127.0.0.1:{port}; a newcomer's browser says localhost.
    const body = await new Promise((resolve, reject) => {
      const req = httpRequest(
        `${instance.origin}/.well-known/oauth-authorization-server`,
        { headers: { host: `localhost:${instance.port}` } },
        (res) => {
          let text = '';
          res.on('data', (c) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode, json: JSON.parse(text) }));
        },
      );
      req.on('error', reject);
      req.end();
    });
    assert.equal(body.status, 200);
    assert.equal(body.json.issuer, base);
    const urls = Object.entries(body.json).filter(([, v]) => typeof v === 'string' && /^https?:\/\//.test(v));
    assert.ok(urls.length >= 5, `endpoints in the metadata: ${urls.map(([k]) => k).join(', ')}`);
    for (const [key, value] of urls) assert.ok(value.startsWith(`${base}/`) || value === base, `${key}: ${value}`);
  });

  test('a CIMD client connects: consent names it with its document host, the code comes back with iss, on another loopback port', async () => {
    const clientId = serve('/agent/client.json', agent('/agent/client.json'));
    const redirectUri = 'http://127.0.0.1:51234/callback'; // the document lists port 8976: RFC 8252 §7.3
    const { client, flow, tokens } = await connect(clientId, redirectUri);
    const host = new URL(docsOrigin).host;
    assert.match(
      textOf(flow.consentPage.text),
      new RegExp(`Allow Example Agent \\(from ${host.replace(/\./g, '\\.')}\\) to use Formwork\\?`),
    );
    assert.match(
      textOf(flow.signInPage.text),
      /Example Agent \(from 127\.0\.0\.1:\d+\) wants to use your Formwork account/,
    );
    // RFC 9207: the authorization response names the issuer.
    assert.equal(flow.callback.searchParams.get('iss'), base);
    assert.ok(flow.callback.href.startsWith(redirectUri));

    assert.equal((await callTool(base, tokens.access_token, 'list_forms')).status, 200);
    const refreshed = await refresh(as, client, tokens.refresh_token);
    assert.equal((await callTool(base, refreshed.access_token, 'list_forms')).status, 200);

    // Fetched once (max-age=300): the token and refresh requests used the copy every instance shares.
    assert.equal(docs.fetched.get('/agent/client.json'), 1);
    const [kept] = await query(
      `SELECT payload, expires_at > now() + interval '200 seconds' AND expires_at <= now() + interval '300 seconds' AS "keptForMaxAge"
         FROM oauth_models WHERE model = 'ClientDocument' AND id = $1`,
      [clientId],
    );
    assert.equal(kept.keptForMaxAge, true);
    assert.equal(kept.payload.client_name, 'Example Agent');
    assert.equal(kept.payload.token_endpoint_auth_method, 'none');
    const [grant] = await query('SELECT client_name FROM oauth_grants WHERE client_id = $1', [clientId]);
    assert.equal(grant.client_name, `Example Agent (from ${host})`);
  });

  test('a document kept by its max-age is not fetched again; a no-store one is fetched on every use and never stored', async () => {
    // The cached copy stays while its max-age lasts, whatever the server serves now.
    serve('/agent/client.json', agent('/agent/client.json', { client_name: 'Renamed Agent' }));
    const again = await startAuthorization(`${docsOrigin}/agent/client.json`);
    assert.equal(again.status, 200);
    assert.match(textOf(again.text), /Example Agent \(from/);
    assert.equal(docs.fetched.get('/agent/client.json'), 1);

    const clientId = serve('/fresh/client.json', agent('/fresh/client.json', { client_name: 'Fresh One' }), {
      headers: { 'cache-control': 'no-store' },
    });
    assert.match(textOf((await startAuthorization(clientId)).text), /Fresh One \(from/);
    serve('/fresh/client.json', agent('/fresh/client.json', { client_name: 'Fresh Two' }), {
      headers: { 'cache-control': 'no-store' },
    });
    assert.match(textOf((await startAuthorization(clientId)).text), /Fresh Two \(from/);
    assert.ok(docs.fetched.get('/fresh/client.json') >= 2);
    assert.deepEqual(await query(`SELECT id FROM oauth_models WHERE id = $1`, [clientId]), []);
  });

  const refusals = [
    [
      'its client_id is another URL',
      '/bad/other-id.json',
      () => agent('/bad/someone-else.json'),
      /must be its own URL/,
    ],
    [
      'it asks for private_key_jwt',
      '/bad/jwt.json',
      () => agent('/bad/jwt.json', { token_endpoint_auth_method: 'private_key_jwt' }),
      /only public clients/,
    ],
    [
      'it holds a client_secret',
      '/bad/secret.json',
      () => agent('/bad/secret.json', { client_secret: 'hunter2' }),
      /client_secret/,
    ],
    [
      'it is larger than 5 KB',
      '/bad/large.json',
      () => agent('/bad/large.json', { software_id: 'x'.repeat(6000) }),
      /at most 5120 are read|more than 5120 bytes/,
    ],
    ['it is not JSON', '/bad/html.json', () => '<html>hello</html>', /is not JSON/],
    [
      'it has no redirect_uris',
      '/bad/no-redirects.json',
      () => agent('/bad/no-redirects.json', { redirect_uris: [] }),
      /redirect_uris/,
    ],
  ];
  for (const [why, path, document, description] of refusals) {
    test(`a document is refused (invalid_client, a 400 page, nothing stored) when ${why}`, async () => {
      const clientId = serve(path, document());
      const page = await startAuthorization(clientId);
      assert.equal(page.status, 400, textOf(page.text));
      assert.match(textOf(page.text), /\(invalid client\)/);
      assert.match(textOf(page.text), description);
      assert.equal(page.location, undefined);
      assert.deepEqual(await query(`SELECT id FROM oauth_models WHERE id = $1`, [clientId]), []);
    });
  }

  test('a document that is missing, or a client_id that is not https, is refused with a reason', async () => {
    const missing = await startAuthorization(`${docsOrigin}/nowhere/client.json`);
    assert.equal(missing.status, 400);
    assert.match(textOf(missing.text), /answered HTTP 404, not 200/);
    const plain = await startAuthorization(`http://127.0.0.1:9/client.json`);
    assert.equal(plain.status, 400);
    assert.match(textOf(plain.text), /must be an https:\/\/ URL/);
  });

  test('a client_id with percent-encoded dot segments is refused before any fetch, in any case', async () => {
    // The URL parser would read /alice/%2e%2e/shared.json as /shared.json: a document someone else serves.
    for (const segment of ['%2e%2e', '%2E%2E', '.%2E', '%2e.', '%2e']) {
      const clientId = `${docsOrigin}/alice/${segment}/shared.json`;
      serve('/shared.json', agent(`/alice/${segment}/shared.json`));
      const page = await startAuthorization(clientId);
      assert.equal(page.status, 400, segment);
      assert.match(textOf(page.text), /\(invalid client\)/);
      assert.match(textOf(page.text), /without \. or \.\. segments, plain or as %2e/);
      assert.deepEqual(await query(`SELECT id FROM oauth_models WHERE id = $1`, [clientId]), []);
    }
    assert.equal(docs.fetched.get('/shared.json'), undefined);
  });

  test('a document server that does not answer is given up on (invalid_client), not waited for', async () => {
    docs.hang('/slow/client.json');
    const page = await startAuthorization(`${docsOrigin}/slow/client.json`);
    assert.equal(page.status, 400);
    assert.match(textOf(page.text), /did not arrive within 5 s/);
  });

  test('the token endpoint answers invalid_client in JSON for a document it cannot use', async () => {
    const clientId = serve('/bad/token.json', agent('/bad/other.json'));
    const res = await fetch(as.token_endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: 'nope',
        client_id: clientId,
        redirect_uri: REGISTERED_REDIRECT,
        code_verifier: 'x'.repeat(43),
      }),
    });
    assert.ok(res.status === 400 || res.status === 401, String(res.status));
    const body = await res.json();
    assert.equal(body.error, 'invalid_client');
    assert.match(body.error_description, /must be its own URL/);
  });

  test('a redirect_uri outside the document is refused, even on loopback with another path', async () => {
    const clientId = serve('/agent2/client.json', agent('/agent2/client.json'));
    const page = await startAuthorization(clientId, 'http://127.0.0.1:51234/elsewhere');
    assert.equal(page.status, 400);
    assert.match(textOf(page.text), /redirect_uri/);
    assert.equal(page.location, undefined);
  });

  test('a registered client (dynamic registration) still connects, and its loopback redirect URI matches on any port, IPv4 or IPv6', async () => {
    const registered = await registerClient(as, { redirectUri: REGISTERED_REDIRECT, name: 'Old Agent' });
    const { tokens } = await connect(registered.client_id, 'http://127.0.0.1:40001/callback');
    assert.equal((await callTool(base, tokens.access_token, 'list_forms')).status, 200);

    const v6 = await startAuthorization(registered.client_id, 'http://[::1]:40002/callback');
    assert.equal(v6.status, 200, textOf(v6.text)); // the sign-in page, not an error
    assert.match(textOf(v6.text), /Old Agent wants to use your Formwork account/);
    // Port aside, the URI must be the registered one: another path, or a non-loopback host, is refused.
    for (const uri of [
      'http://127.0.0.1:40001/other',
      'http://192.0.2.1:8976/callback',
      'http://[::1]:40002/callback/x',
    ]) {
      const page = await startAuthorization(registered.client_id, uri);
      assert.equal(page.status, 400, uri);
      assert.match(textOf(page.text), /redirect_uri/, uri);
    }
  });

  test('what a refused document held (a client_secret) reaches no log line', () => {
    assert.deepEqual(
      instance.lines.filter((l) => l.includes('hunter2')),
      [],
    );
  });
});
