/**
 * The OAuth 2.1 authorization server end to end, as a real client uses it: the BUILT service
 * (dist/) on a fresh PostgreSQL database, a client that knows only the API's address, and
 * oauth4webapi for every protocol step (discovery, registration, PKCE, code exchange, refresh,
 * revocation, resource requests). The sign-in and consent pages are driven like a browser would
 * (cookies, hidden fields, redirects). Run: npm run --silent build && node --test test/oauth/
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import {
  api,
  authorizationUrl,
  authorize,
  callTool,
  cli,
  cliOk,
  consent,
  CookieJar,
  discover,
  ensureBuilt,
  exchangeCode,
  formEndingWith,
  insecure,
  navigate,
  oauth,
  oauthError,
  parseForms,
  refresh,
  registerClient,
  ROOT,
  SCOPES,
  seededDatabase,
  signIn,
  startInstance,
  textOf,
  via,
  waitUntil,
} from './support.mjs';

const OWNER = 'ada@acme.test';
const EDITOR = 'ed@acme.test';
const LOCKED = 'lou@acme.test';
const RUSHED = 'max@acme.test';
const PASSWORD = 'correct horse battery staple';
const WITHIN = 5_000; // revocation, reuse detection and role changes are felt on every instance within 5 s

/** Plain words the consent page must use for each scope. */
const SCOPE_WORDS = {
  'forms:read': 'See your forms',
  'forms:write': 'Create, change, publish and delete forms',
  'responses:read': 'See responses',
  'responses:write': 'Add and delete responses',
  'webhooks:read': 'See webhook endpoints and their delivery logs',
  'webhooks:write': 'Create, change and delete webhook endpoints, which send your forms and responses to other sites',
};

describe('OAuth 2.1: discovery, registration, PKCE, consent, tokens, refresh, revocation', { timeout: 240_000 }, () => {
  let db;
  let instance;
  let base; // PUBLIC_URL = the issuer
  let found; // discovery results
  let as; // authorization server metadata (oauth4webapi)
  let client; // the registered public client
  let redirectUri;
  const secrets = []; // every token and code issued, to check that none reaches a log line
  const logs = []; // the output of every instance started

  /** Signs `email` in, consents to `scopes` in `workspace`, and exchanges the code. */
  async function tokensFor({
    email = OWNER,
    scopes = SCOPES,
    workspace = 'acme',
    resource = found.resource,
    forClient = client,
  } = {}) {
    const flow = await authorize(as, forClient, {
      redirectUri,
      scopes,
      resource,
      email,
      password: PASSWORD,
      workspace,
    });
    const tokens = await exchangeCode(as, forClient, flow, { redirectUri, resource });
    secrets.push(flow.callback.searchParams.get('code'), tokens.access_token, tokens.refresh_token);
    return { flow, tokens };
  }

  const refusedWithin = (token, what) =>
    waitUntil(async () => (await callTool(base, token, 'list_forms')).status === 401, WITHIN, what);

  before(async () => {
    ensureBuilt();
    db = await seededDatabase('flow', {
      workspaces: [
        { name: 'Acme', slug: 'acme', plan: 'pro', ownerEmail: OWNER },
        { name: 'Side project', slug: 'side', plan: 'free', ownerEmail: OWNER },
      ],
      // Added before their passwords are set: set-password needs the user to exist.
      members: [
        { workspace: 'acme', email: EDITOR, role: 'editor' },
        { workspace: 'acme', email: LOCKED, role: 'viewer' },
        { workspace: 'acme', email: RUSHED, role: 'viewer' },
      ],
      // As a shell pipes it (`echo "$PW" | ... --password-stdin`): the trailing newline is not part of the password.
      passwords: Object.fromEntries([OWNER, EDITOR, LOCKED, RUSHED].map((email) => [email, `${PASSWORD}\n`])),
    });
    instance = await startInstance(db.url);
    logs.push(instance.lines);
    base = instance.base;
    redirectUri = 'http://127.0.0.1:8976/callback'; // never loaded: the test reads the code from the redirect
  });

  after(async () => {
    await instance?.stop();
    await db?.drop();
  });

  test('discovers the authorization server from the 401 of GET /api/v1 (RFC 9728, RFC 8414)', async () => {
    found = await discover(base);
    assert.equal(found.status, 401);
    assert.match(found.challenge, /^Bearer /);
    assert.match(found.challenge, /realm="formwork"/);
    assert.doesNotMatch(found.challenge, /error=/, 'no credential: no error attribute (RFC 6750 §3.1)');
    assert.equal(found.metadataUrl, `${base}/.well-known/oauth-protected-resource/api/v1`);

    const rs = found.resourceServer;
    assert.equal(rs.resource, `${base}/api/v1`);
    assert.deepEqual(rs.authorization_servers, [base]);
    assert.deepEqual(rs.bearer_methods_supported, ['header']);
    for (const s of SCOPES) assert.ok(rs.scopes_supported.includes(s), `protected resource metadata lists ${s}`);

    as = found.as;
    assert.equal(as.issuer, base);
    assert.equal(as.authorization_endpoint, `${base}/oauth/authorize`);
    assert.equal(as.token_endpoint, `${base}/oauth/token`);
    assert.equal(as.registration_endpoint, `${base}/oauth/register`);
    assert.equal(as.revocation_endpoint, `${base}/oauth/revoke`);
    assert.equal(as.jwks_uri, `${base}/oauth/jwks`);
    assert.deepEqual(as.code_challenge_methods_supported, ['S256']);
    assert.deepEqual(as.response_types_supported, ['code']);
    for (const g of ['authorization_code', 'refresh_token'])
      assert.ok(as.grant_types_supported.includes(g), `grant type ${g}`);
    for (const g of ['implicit', 'password'])
      assert.ok(!as.grant_types_supported.includes(g), `no ${g} grant (OAuth 2.1)`);
    for (const s of SCOPES) assert.ok(as.scopes_supported.includes(s), `authorization server metadata lists ${s}`);

    // The OpenID Connect discovery document names the same server.
    const oidc = await oauth.processDiscoveryResponse(
      new URL(base),
      await oauth.discoveryRequest(new URL(base), { algorithm: 'oidc', ...insecure }),
    );
    assert.equal(oidc.issuer, base);
    assert.equal(oidc.token_endpoint, as.token_endpoint);
    assert.deepEqual(oidc.code_challenge_methods_supported, ['S256']);

    // The root document names the issuer too.
    const root = await (await fetch(`${base}/.well-known/oauth-protected-resource`)).json();
    assert.deepEqual(root.authorization_servers, [base]);
  });

  test('serves the agent walkthrough at /auth.md as Markdown', async () => {
    const res = await fetch(`${base}/auth.md`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/markdown/);
    assert.equal(await res.text(), readFileSync(join(ROOT, 'docs', 'auth.md'), 'utf8'));
  });

  test('registers a public client (RFC 7591), and refuses a registration without redirect URIs', async () => {
    client = await registerClient(as, { redirectUri, name: 'Formwork test agent' }); // oauth4webapi checks the 201
    assert.equal(typeof client.client_id, 'string');
    assert.ok(client.client_id.length > 0);
    assert.deepEqual(client.redirect_uris, [redirectUri]);
    assert.equal(client.token_endpoint_auth_method, 'none');
    assert.equal(client.client_secret, undefined, 'a public client gets no secret');

    // RFC 7591 §3.2.2: 400 with a JSON error. (oidc-provider also sends a Bearer challenge on this
    // endpoint, which oauth4webapi reports as a challenge: read the body from either.)
    let refused;
    try {
      await oauth.processDynamicClientRegistrationResponse(
        await oauth.dynamicClientRegistrationRequest(
          as,
          { client_name: 'No redirect', token_endpoint_auth_method: 'none' },
          insecure,
        ),
      );
    } catch (err) {
      refused = err;
    }
    assert.ok(
      refused instanceof oauth.ResponseBodyError || refused instanceof oauth.WWWAuthenticateChallengeError,
      String(refused),
    );
    assert.equal(refused.status, 400);
    const error = refused instanceof oauth.ResponseBodyError ? refused.error : (await refused.response.json()).error;
    assert.match(error, /^invalid_(redirect_uri|client_metadata)$/);
  });

  test('signs in, consents in plain words, exchanges the code with PKCE, and calls tools in the chosen workspace', async () => {
    const { flow, tokens } = await tokensFor({ scopes: SCOPES, workspace: 'acme' });

    // The sign-in page: email, password, a CSRF token.
    const signInForm = formEndingWith(flow.signInPage, '/login');
    assert.equal(signInForm.method, 'post');
    assert.match(signInForm.action, /^\/oauth\/interaction\/[^/]+\/login$/);
    const input = (form, name) => form.inputs.find((i) => i.name === name);
    assert.ok(input(signInForm, 'email'));
    assert.equal(input(signInForm, 'password')?.type, 'password');
    assert.equal(input(signInForm, 'csrf')?.type, 'hidden');
    assert.ok(input(signInForm, 'csrf').value.length >= 16, 'a CSRF token worth the name');
    assert.ok(
      signInForm.buttons.some((b) => b.text === 'Sign in') ||
        signInForm.inputs.some((i) => i.type === 'submit' && i.value === 'Sign in'),
    );

    // The consent page: the client, the scopes in plain words, a choice of workspace, Allow and Deny.
    const page = flow.consentPage;
    const text = textOf(page.text);
    assert.ok(text.includes('Formwork test agent'), 'the consent page names the client');
    for (const s of SCOPES)
      assert.ok(text.includes(SCOPE_WORDS[s]), `the consent page says "${SCOPE_WORDS[s]}" for ${s}`);
    const allow = formEndingWith(page, '/confirm');
    assert.equal(allow.method, 'post');
    assert.match(allow.action, /^\/oauth\/interaction\/[^/]+\/confirm$/);
    const radios = allow.inputs.filter((i) => i.type === 'radio' && i.name === 'workspace');
    assert.deepEqual(radios.map((r) => r.value).sort(), ['acme', 'side'], 'one choice per workspace of the user');
    assert.equal(radios.filter((r) => r.checked).length, 1);
    assert.ok(radios[0].checked, 'the first workspace is chosen by default');
    assert.equal(input(allow, 'csrf')?.type, 'hidden');
    assert.ok(
      allow.buttons.some((b) => b.text === 'Allow') ||
        allow.inputs.some((i) => i.type === 'submit' && i.value === 'Allow'),
    );
    const deny = formEndingWith(page, '/abort');
    assert.ok(
      deny.buttons.some((b) => b.text === 'Deny') || deny.inputs.some((i) => i.type === 'submit' && i.value === 'Deny'),
    );

    // The authorization response came back to the client with the state and the issuer.
    assert.equal(flow.callback.origin + flow.callback.pathname, redirectUri);
    assert.equal(flow.callback.searchParams.get('iss'), base);

    // The token response (checked by oauth4webapi, and here).
    assert.equal(tokens.token_type.toLowerCase(), 'bearer');
    assert.ok(tokens.expires_in > 0);
    assert.equal(typeof tokens.refresh_token, 'string');
    assert.deepEqual(tokens.scope.split(' ').sort(), [...SCOPES].sort());
    assert.notEqual(tokens.access_token.split('.').length, 3, 'the access token is opaque, not a JWT');

    // The token acts in the chosen workspace with the user's role there.
    const me = await api(base, tokens.access_token, 'GET', '/api/v1');
    assert.equal(me.status, 200, me.text);
    assert.equal(me.body.workspace.slug, 'acme');
    assert.equal(me.body.role, 'owner');
    assert.deepEqual([...me.body.scopes].sort(), [...SCOPES].sort());
    assert.ok(
      !me.text.includes(tokens.access_token) && !me.text.includes(tokens.refresh_token),
      'GET /api/v1 never shows a token secret',
    );

    const created = await callTool(base, tokens.access_token, 'create_form', { title: 'Made through OAuth' });
    assert.equal(created.status, 200, created.text);
    const list = await callTool(base, tokens.access_token, 'list_forms');
    assert.equal(list.status, 200, list.text);
    assert.ok(list.body.forms.some((f) => f.publicId === created.body.publicId));
    for (const r of [created, list])
      assert.ok(!r.text.includes(tokens.access_token), 'tool answers never show a token secret');

    // Tokens are read from the Authorization header only.
    const inQuery = await fetch(`${base}/api/v1?access_token=${encodeURIComponent(tokens.access_token)}`);
    assert.equal(inQuery.status, 401);
  });

  test('works without the resource parameter (the default audience is the API), and refuses a tool outside the granted scopes with insufficient_scope', async () => {
    const { flow, tokens } = await tokensFor({ scopes: ['forms:read'], resource: null });
    assert.ok(!new URL(flow.signInPage.chain[0].url).searchParams.has('resource'));
    const text = textOf(flow.consentPage.text);
    assert.ok(text.includes(SCOPE_WORDS['forms:read']));
    for (const s of ['forms:write', 'responses:read', 'responses:write', 'webhooks:read', 'webhooks:write'])
      assert.ok(!text.includes(SCOPE_WORDS[s]), `the consent page does not mention ${s}`);
    assert.equal(tokens.scope, 'forms:read');

    assert.equal((await callTool(base, tokens.access_token, 'list_forms')).status, 200);

    for (const [tool, needed] of [
      ['list_responses', 'responses:read'],
      ['create_form', 'forms:write'],
    ]) {
      const refused = await callTool(base, tokens.access_token, tool, {});
      assert.equal(refused.status, 403, refused.text);
      assert.equal(refused.body.error.code, 'insufficient_scope');
      const bearer = refused.challenges?.find((c) => c.scheme === 'bearer');
      assert.ok(bearer, `a Bearer challenge: ${refused.headers.get('www-authenticate')}`);
      assert.equal(bearer.parameters.error, 'insufficient_scope');
      assert.equal(bearer.parameters.scope, needed);
    }
  });

  test('acts in the workspace the user picked: a Free one refuses write tools with pro_required', async () => {
    const { tokens } = await tokensFor({ scopes: ['forms:read', 'forms:write'], workspace: 'side' });
    const me = await api(base, tokens.access_token, 'GET', '/api/v1');
    assert.equal(me.body.workspace.slug, 'side');
    assert.equal(me.body.workspace.plan, 'free');
    const list = await callTool(base, tokens.access_token, 'list_forms');
    assert.equal(list.status, 200);
    assert.equal(list.body.total, 0, "the other workspace's forms are not visible");
    const refused = await callTool(base, tokens.access_token, 'create_form', { title: 'Nope' });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.error.code, 'pro_required');
  });

  test('rotates refresh tokens; reusing a spent one revokes the whole grant within 5 s', async () => {
    const { tokens: first } = await tokensFor({ scopes: ['forms:read'] });
    const second = await refresh(as, client, first.refresh_token);
    secrets.push(second.access_token, second.refresh_token);
    assert.notEqual(second.access_token, first.access_token);
    assert.notEqual(second.refresh_token, first.refresh_token, 'the refresh token is rotated');
    assert.equal(second.scope, 'forms:read');
    assert.equal((await callTool(base, second.access_token, 'list_forms')).status, 200);

    const third = await refresh(as, client, second.refresh_token);
    secrets.push(third.access_token, third.refresh_token);
    assert.equal((await callTool(base, third.access_token, 'list_forms')).status, 200);

    // The spent refresh token again: refused, and the grant is gone.
    const reuse = await oauthError(() => refresh(as, client, second.refresh_token));
    assert.equal(reuse.status, 400);
    assert.equal(reuse.error, 'invalid_grant');
    await refusedWithin(
      third.access_token,
      'the newest access token of a grant whose refresh token was reused is refused',
    );
    const afterReuse = await callTool(base, third.access_token, 'list_forms');
    assert.equal(afterReuse.body.error.code, 'unauthorized');
    assert.equal(afterReuse.challenges?.[0]?.parameters.error, 'invalid_token');
    const newest = await oauthError(() => refresh(as, client, third.refresh_token));
    assert.equal(newest.error, 'invalid_grant', 'the newest refresh token died with its grant');
  });

  test('revokes tokens (RFC 7009): 200 for any token, a revoked access token refused within 5 s', async () => {
    const { tokens } = await tokensFor({ scopes: ['forms:read'] });
    assert.equal((await callTool(base, tokens.access_token, 'list_forms')).status, 200); // verified and cached

    await oauth.processRevocationResponse(
      await oauth.revocationRequest(as, client, oauth.None(), tokens.access_token, insecure),
    );
    await refusedWithin(tokens.access_token, 'the revoked access token is refused');

    // Revoking the refresh token: it can no longer be used.
    await oauth.processRevocationResponse(
      await oauth.revocationRequest(as, client, oauth.None(), tokens.refresh_token, insecure),
    );
    assert.equal((await oauthError(() => refresh(as, client, tokens.refresh_token))).error, 'invalid_grant');

    // Unknown and already revoked tokens: still 200.
    for (const token of ['not-a-token-at-all', tokens.access_token]) {
      const res = await oauth.revocationRequest(as, client, oauth.None(), token, insecure);
      assert.equal(res.status, 200);
    }
  });

  test('audit log: each consent is app.connect (person, app, scopes) and a grant revoked by the server app.revoke', async () => {
    const pool = new pg.Client({ connectionString: db.url });
    await pool.connect();
    try {
      const eventsOf = async (grantId) =>
        (
          await pool.query(
            `SELECT e.action, e.actor_kind, e.actor_id, e.actor_user_id, e.details, w.slug
               FROM audit_events e JOIN workspaces w ON w.id = e.workspace_id WHERE e.subject_id = $1 ORDER BY e.at`,
            [grantId],
          )
        ).rows;
      const grantOf = async (accessToken) =>
        (await pool.query(`SELECT grant_id FROM oauth_models WHERE model = 'AccessToken' AND id = $1`, [accessToken]))
          .rows[0].grant_id;
      const owner = (await pool.query('SELECT id FROM users WHERE email = $1', [OWNER])).rows[0].id;

      // A consent: recorded once, in the workspace chosen, as done by the person.
      const { tokens } = await tokensFor({ scopes: ['forms:read', 'responses:read'] });
      const grantId = await grantOf(tokens.access_token);
      const [connect] = await eventsOf(grantId);
      assert.equal(connect.action, 'app.connect');
      assert.equal(connect.slug, 'acme');
      assert.equal(connect.actor_kind, 'session');
      assert.equal(connect.actor_user_id, owner);
      assert.equal(connect.details.person, OWNER);
      assert.equal(connect.details.clientId, client.client_id);
      assert.deepEqual([...connect.details.scopes].sort(), ['forms:read', 'responses:read']);

      // The app revokes its refresh token (RFC 7009): oidc-provider revokes the grant, and the log says so.
      await oauth.processRevocationResponse(
        await oauth.revocationRequest(as, client, oauth.None(), tokens.refresh_token, insecure),
      );
      await waitUntil(async () => (await eventsOf(grantId)).length === 2, WITHIN, 'the revocation is recorded');
      const [, revoke] = await eventsOf(grantId);
      assert.equal(revoke.action, 'app.revoke');
      assert.equal(revoke.slug, 'acme');
      assert.equal(revoke.actor_kind, 'oauth');
      assert.equal(revoke.actor_id, grantId);
      assert.equal(revoke.details.person, OWNER);

      // Reuse of a spent refresh token revokes the grant too: recorded the same way.
      const { tokens: second } = await tokensFor({ scopes: ['forms:read'] });
      const secondGrant = await grantOf(second.access_token);
      const rotated = await refresh(as, client, second.refresh_token);
      secrets.push(rotated.access_token, rotated.refresh_token);
      await oauthError(() => refresh(as, client, second.refresh_token));
      await waitUntil(
        async () => (await eventsOf(secondGrant)).some((e) => e.action === 'app.revoke'),
        WITHIN,
        'the revocation after reuse is recorded',
      );
      assert.deepEqual(
        (await eventsOf(secondGrant)).map((e) => e.action),
        ['app.connect', 'app.revoke'],
      );
      // No secret in a record.
      const all = JSON.stringify((await pool.query('SELECT details FROM audit_events')).rows);
      for (const secret of [tokens.access_token, tokens.refresh_token, second.refresh_token])
        assert.ok(!all.includes(secret));
    } finally {
      await pool.end();
    }
  });

  test("acts with the member's current role: a demoted editor loses write access within 5 s", async () => {
    const { tokens } = await tokensFor({ email: EDITOR, scopes: ['forms:read', 'forms:write'] });
    const me = await api(base, tokens.access_token, 'GET', '/api/v1');
    assert.equal(me.body.role, 'editor');
    assert.equal(
      (await callTool(base, tokens.access_token, 'create_form', { title: 'Before the demotion' })).status,
      200,
    );

    await cliOk(db.url, ['member', 'add', '--workspace', 'acme', '--email', EDITOR, '--role', 'viewer', '--json']);
    // Polled with arguments that would be refused anyway (the role is checked before the
    // arguments): an editor gets 400 invalid_arguments, a viewer 403 forbidden, and nothing is created.
    // Right after the demotion either may come: the CLI alone can outlast the 4 s credential cache
    // on a loaded machine.
    assert.ok([400, 403].includes((await callTool(base, tokens.access_token, 'create_form', {})).status));
    await waitUntil(
      async () => (await callTool(base, tokens.access_token, 'create_form', {})).status === 403,
      WITHIN,
      'the demoted member can no longer write',
    );
    const refused = await callTool(base, tokens.access_token, 'create_form', { title: 'After the demotion' });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.error.code, 'forbidden');
    assert.equal(
      (await callTool(base, tokens.access_token, 'list_forms')).status,
      200,
      'reading is still allowed to a viewer',
    );
    assert.equal((await api(base, tokens.access_token, 'GET', '/api/v1')).body.role, 'viewer');
  });

  test('lists the grants of a workspace with the CLI and revokes one: its tokens refused within 5 s', async () => {
    const other = await registerClient(as, { redirectUri, name: 'Nightly report bot' });
    const { tokens } = await tokensFor({ scopes: ['forms:read', 'responses:read'], forClient: other });
    assert.equal((await callTool(base, tokens.access_token, 'list_forms')).status, 200);

    const listed = await cliOk(db.url, ['grant', 'list', '--workspace', 'acme', '--json']);
    for (const secret of secrets) assert.ok(!listed.stdout.includes(secret), 'grant list never shows a token or code');
    const grants = listed.json.grants;
    assert.ok(Array.isArray(grants));
    const grant = grants.find((g) => g.clientId === other.client_id);
    assert.ok(grant, `the new grant is listed: ${listed.stdout}`);
    assert.equal(grant.clientName, 'Nightly report bot');
    assert.equal(grant.userEmail, OWNER);
    assert.deepEqual([...grant.scopes].sort(), ['forms:read', 'responses:read']);
    assert.ok(!Number.isNaN(Date.parse(grant.createdAt)));
    assert.ok(
      grants.some((g) => g.clientId === client.client_id && g.userEmail === OWNER),
      'the earlier grants are listed too',
    );
    assert.ok(!grants.some((g) => g.userEmail === EDITOR && g.scopes.includes('responses:read')));
    const elsewhere = await cliOk(db.url, ['grant', 'list', '--workspace', 'side', '--json']);
    assert.ok(!elsewhere.json.grants.some((g) => g.id === grant.id), "another workspace's list does not show it");

    const revoked = await cliOk(db.url, ['grant', 'revoke', '--id', grant.id, '--json']);
    assert.ok(!revoked.stdout.includes(tokens.access_token));
    // The operator's revoke is in the workspace's audit log, as app.revoke by the operator.
    const audit = new pg.Client({ connectionString: db.url });
    await audit.connect();
    try {
      const { rows } = await audit.query(
        `SELECT action, actor_kind, details->>'by' AS by FROM audit_events WHERE subject_id = $1 AND action = 'app.revoke'`,
        [grant.id],
      );
      assert.deepEqual(rows, [{ action: 'app.revoke', actor_kind: 'operator', by: 'operator (command line)' }]);
    } finally {
      await audit.end();
    }
    await refusedWithin(tokens.access_token, 'the access token of a revoked grant is refused');
    assert.equal((await oauthError(() => refresh(as, other, tokens.refresh_token))).error, 'invalid_grant');
    const after = await cliOk(db.url, ['grant', 'list', '--workspace', 'acme', '--json']);
    const still = after.json.grants.find((g) => g.id === grant.id);
    assert.ok(!still || still.revokedAt, 'a revoked grant is gone from the list, or marked revoked');

    const unknown = await cli(db.url, ['grant', 'revoke', '--id', '00000000-0000-4000-8000-000000000000', '--json']);
    assert.notEqual(unknown.code, 0, 'revoking an unknown grant fails');
    assert.ok(unknown.json?.error?.code, `an error envelope: ${unknown.stdout}${unknown.stderr}`);
  });

  test('keeps tokens and sign-in state in PostgreSQL: they survive a restart and work on another instance', async () => {
    const { tokens } = await tokensFor({ scopes: ['forms:read'] });
    await instance.stop();
    instance = await startInstance(db.url, { port: instance.port });
    logs.push(instance.lines);
    assert.equal(
      (await callTool(base, tokens.access_token, 'list_forms')).status,
      200,
      'the access token survived the restart',
    );

    // A second instance behind the same address (PUBLIC_URL), as behind a load balancer.
    const other = await startInstance(db.url, { publicUrl: base });
    logs.push(other.lines);
    try {
      const there = via(other.origin);
      assert.equal(
        (await callTool(base, tokens.access_token, 'list_forms', {}, there)).status,
        200,
        'the token works on the other instance',
      );
      const refreshed = await refresh(as, client, tokens.refresh_token, there);
      secrets.push(refreshed.access_token, refreshed.refresh_token);
      assert.equal(
        (await callTool(base, refreshed.access_token, 'list_forms')).status,
        200,
        'a token refreshed on one instance works on the other',
      );

      // One sign-in that hops between the instances at every step.
      const jar = new CookieJar();
      const request = await authorizationUrl(as, client, {
        redirectUri,
        scopes: ['forms:read'],
        resource: found.resource,
      });
      const toOther = (u) => u.replace(base, other.origin);
      const signInPage = await navigate(jar, request.url.href, {}, { stopAt: redirectUri });
      const consentPage = await signIn(jar, signInPage, { email: OWNER, password: PASSWORD, rewrite: toOther });
      assert.equal(consentPage.status, 200, textOf(consentPage.text).slice(0, 500));
      const done = await consent(jar, consentPage, { workspace: 'acme', stopAt: redirectUri });
      assert.ok(done.location?.startsWith(redirectUri), `back at the client: ${done.status} ${done.url}`);
      const hopped = await exchangeCode(
        as,
        client,
        { ...request, callback: new URL(done.location) },
        { redirectUri, options: there },
      );
      secrets.push(hopped.access_token, hopped.refresh_token);
      assert.equal((await callTool(base, hopped.access_token, 'list_forms')).status, 200);
    } finally {
      await other.stop();
    }
  });

  // -------------------------------------------------------------------------------------------
  // Bad input: a clear error, and nothing changes
  // -------------------------------------------------------------------------------------------

  async function signInPage(jar = new CookieJar(), { scopes = ['forms:read'], extra } = {}) {
    const request = await authorizationUrl(as, client, { redirectUri, scopes, resource: found.resource, extra });
    const page = await navigate(jar, request.url.href, {}, { stopAt: redirectUri });
    assert.equal(page.status, 200, `the sign-in page: ${page.status} ${page.url}`);
    formEndingWith(page, '/login');
    return { jar, page, request };
  }

  test('a wrong password (or an unknown email) gets 401 "Email or password is wrong", and the user stays signed out', async () => {
    const { jar, page, request } = await signInPage();
    for (const [email, password] of [
      [OWNER, 'not the password'],
      ['nobody@acme.test', PASSWORD],
    ]) {
      const wrong = await signIn(jar, page, { email, password });
      assert.equal(wrong.status, 401);
      assert.match(wrong.headers.get('content-type') ?? '', /^text\/html/);
      assert.ok(textOf(wrong.text).includes('Email or password is wrong'));
      assert.ok(!wrong.text.includes(password), 'the page does not echo the password');
    }
    // Still the sign-in page, and the interaction still works with the right password.
    const again = await navigate(jar, page.url);
    assert.equal(again.status, 200);
    formEndingWith(again, '/login');
    assert.ok(!parseForms(again.text).some((f) => f.action?.endsWith('/confirm')), 'no consent without signing in');
    const consentPage = await signIn(jar, again, { email: OWNER, password: PASSWORD });
    const done = await consent(jar, consentPage, { workspace: 'acme', stopAt: redirectUri });
    assert.ok(done.location?.startsWith(redirectUri));
    const tokens = await exchangeCode(as, client, { ...request, callback: new URL(done.location) }, { redirectUri });
    secrets.push(tokens.access_token, tokens.refresh_token);
  });

  test("a password that works once (the demo owner's printed one) connects no app: 403, choose one in the settings first", async () => {
    const sql = new pg.Client({ connectionString: db.url });
    await sql.connect();
    try {
      await sql.query('UPDATE users SET password_must_change = true WHERE email = $1', [RUSHED]);
      const { jar, page } = await signInPage();
      const refused = await signIn(jar, page, { email: RUSHED, password: PASSWORD });
      assert.equal(refused.status, 403);
      assert.ok(textOf(refused.text).includes('sign in at /settings first'));
      assert.ok(!parseForms(refused.text).some((f) => f.action?.endsWith('/confirm')), 'no consent');
    } finally {
      await sql.query('UPDATE users SET password_must_change = false WHERE email = $1', [RUSHED]);
      await sql.end();
    }
  });

  test('a missing or wrong CSRF token gets 403 on the sign-in and the consent forms, and changes nothing', async () => {
    const { jar, page, request } = await signInPage();
    for (const csrf of [null, 'forged-csrf-token']) {
      const refused = await signIn(jar, page, { email: OWNER, password: PASSWORD, csrf });
      assert.equal(refused.status, 403, `csrf ${csrf}`);
      assert.match(refused.headers.get('content-type') ?? '', /^text\/html/);
      assert.ok(textOf(refused.text).includes('expired or was tampered with'));
    }
    const stillSignIn = await navigate(jar, page.url);
    formEndingWith(stillSignIn, '/login');

    const consentPage = await signIn(jar, stillSignIn, { email: OWNER, password: PASSWORD });
    for (const csrf of [null, 'forged-csrf-token']) {
      const refused = await consent(jar, consentPage, { workspace: 'acme', csrf, stopAt: redirectUri });
      assert.equal(refused.status, 403, `consent with csrf ${csrf}`);
      assert.ok(textOf(refused.text).includes('expired or was tampered with'));
      assert.ok(!refused.location, 'no redirect to the client');
    }
    const done = await consent(jar, consentPage, { workspace: 'acme', stopAt: redirectUri });
    assert.ok(done.location?.startsWith(redirectUri), 'the consent still works with its token');
    const tokens = await exchangeCode(as, client, { ...request, callback: new URL(done.location) }, { redirectUri });
    secrets.push(tokens.access_token, tokens.refresh_token);
  });

  test('an unknown client_id gets an error page, never a redirect', async () => {
    const request = await authorizationUrl(
      as,
      { client_id: 'no-such-client' },
      { redirectUri, scopes: ['forms:read'] },
    );
    const res = await navigate(new CookieJar(), request.url.href, {}, { stopAt: redirectUri });
    assert.equal(res.status, 400);
    assert.equal(res.location, undefined, 'no redirect');
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(textOf(res.text), /client/i);
  });

  test('a redirect URI that does not match the registered one (but for a loopback port) gets an error page, never a redirect', async () => {
    for (const wrong of [
      `${redirectUri}/elsewhere`,
      `${redirectUri}?next=1`,
      // Another port of 127.0.0.1 or [::1] matches (RFC 8252 §7.3, see cimd.test.mjs); another host does not.
      'http://localhost:8976/callback',
      'http://127.0.0.2:8976/callback',
      'https://attacker.example/callback',
    ]) {
      const request = await authorizationUrl(as, client, { redirectUri: wrong, scopes: ['forms:read'] });
      const res = await navigate(new CookieJar(), request.url.href, {}, { stopAt: 'http://never' });
      assert.equal(res.status, 400, wrong);
      assert.equal(res.location, undefined, `no redirect for ${wrong}`);
      assert.match(textOf(res.text), /redirect/i);
    }
  });

  test('a wrong PKCE verifier gets invalid_grant, and the code still works with the right one', async () => {
    const flow = await authorize(as, client, {
      redirectUri,
      scopes: ['forms:read'],
      resource: found.resource,
      email: OWNER,
      password: PASSWORD,
      workspace: 'acme',
    });
    const wrong = await oauthError(() =>
      exchangeCode(as, client, flow, { redirectUri, verifier: oauth.generateRandomCodeVerifier() }),
    );
    assert.equal(wrong.status, 400);
    assert.equal(wrong.error, 'invalid_grant');
    const tokens = await exchangeCode(as, client, flow, { redirectUri });
    secrets.push(tokens.access_token, tokens.refresh_token);
    assert.equal((await callTool(base, tokens.access_token, 'list_forms')).status, 200);
    // A code is single-use.
    const again = await oauthError(() => exchangeCode(as, client, flow, { redirectUri }));
    assert.equal(again.error, 'invalid_grant');
  });

  test('an authorization request without PKCE S256 is refused before any sign-in, on a Formwork page (never redirected)', async () => {
    for (const extra of [
      { code_challenge: undefined, code_challenge_method: undefined },
      { code_challenge_method: 'plain' },
    ]) {
      const request = await authorizationUrl(as, client, { redirectUri, scopes: ['forms:read'], extra });
      if ('code_challenge' in extra) assert.ok(!request.url.searchParams.has('code_challenge'));
      const res = await navigate(new CookieJar(), request.url.href, {}, { stopAt: redirectUri });
      assert.ok(!res.chain.some((r) => r.url.includes('/oauth/interaction/')), 'no sign-in page');
      assert.equal(
        res.location,
        undefined,
        'no redirect to the client (anyone can register one: an open redirector otherwise)',
      );
      assert.equal(res.status, 400);
      assert.match(textOf(res.text), /pkce|code_challenge/i);
    }
  });

  test('asking for a resource other than this API is refused (invalid_target), on a Formwork page', async () => {
    const request = await authorizationUrl(as, client, {
      redirectUri,
      scopes: ['forms:read'],
      resource: 'https://other-api.example/v1',
    });
    const res = await navigate(new CookieJar(), request.url.href, {}, { stopAt: redirectUri });
    assert.equal(res.location, undefined, 'no redirect');
    assert.equal(res.status, 400);
    assert.match(textOf(res.text), /invalid target/);
    assert.ok(!res.chain.some((r) => r.url.includes('/oauth/interaction/')), 'no sign-in page');
  });

  test('Deny sends the user back to the client with access_denied, and no code', async () => {
    const { jar, page, request } = await signInPage();
    const consentPage = await signIn(jar, page, { email: OWNER, password: PASSWORD });
    const denied = await consent(jar, consentPage, { decision: 'deny', stopAt: redirectUri });
    assert.ok(denied.location?.startsWith(redirectUri), `back at the client: ${denied.status} ${denied.url}`);
    const callback = new URL(denied.location);
    assert.equal(callback.searchParams.get('code'), null);
    const refused = await oauthError(async () => oauth.validateAuthResponse(as, client, callback, request.state));
    assert.equal(refused.error, 'access_denied');
  });

  test('user set-password refuses a password under 10 characters and keeps the old one', async () => {
    const short = await cli(db.url, ['user', 'set-password', '--email', OWNER, '--password-stdin', '--json'], {
      input: 'short\n',
    });
    assert.equal(short.code, 2, short.stdout + short.stderr);
    assert.equal(short.json?.error?.code, 'invalid_arguments');
    const { tokens } = await tokensFor({ scopes: ['forms:read'] }); // signs in with the old password
    assert.ok(tokens.access_token);
  });

  test('after 5 wrong passwords for one email within 15 minutes, further attempts get 429 "Too many attempts"', async () => {
    const { jar, page } = await signInPage();
    for (let i = 1; i <= 5; i++) {
      const wrong = await signIn(jar, page, { email: LOCKED, password: `wrong password ${i}` });
      assert.equal(wrong.status, 401, `attempt ${i}`);
    }
    const locked = await signIn(jar, page, { email: LOCKED, password: PASSWORD });
    assert.equal(locked.status, 429, 'even the right password waits');
    assert.ok(textOf(locked.text).includes('Too many attempts'));
    formEndingWith(await navigate(jar, page.url), '/login'); // still signed out

    // Another email is not locked out.
    const { jar: otherJar, page: otherPage } = await signInPage();
    const consentPage = await signIn(otherJar, otherPage, { email: OWNER, password: PASSWORD });
    assert.equal(consentPage.status, 200);
    formEndingWith(consentPage, '/confirm');
  });

  test('the lockout holds against parallel guesses: at most 5 wrong passwords are checked', async () => {
    const { jar, page } = await signInPage();
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => signIn(jar, page, { email: RUSHED, password: `parallel guess ${i}` })),
    );
    const statuses = answers.map((a) => a.status);
    assert.ok(
      statuses.every((s) => s === 401 || s === 429),
      statuses.join(','),
    );
    assert.ok(
      statuses.filter((s) => s === 401).length <= 5,
      `12 parallel guesses: ${statuses.filter((s) => s === 401).length} were checked (${statuses.join(',')})`,
    );
    assert.equal((await signIn(jar, page, { email: RUSHED, password: PASSWORD })).status, 429);
  });

  test('an unknown email locks like a known one, so the lockout does not tell which emails have accounts', async () => {
    const { jar, page } = await signInPage();
    for (let i = 1; i <= 5; i++)
      assert.equal(
        (await signIn(jar, page, { email: 'ghost@acme.test', password: `guess ${i}` })).status,
        401,
        `attempt ${i}`,
      );
    const sixth = await signIn(jar, page, { email: 'ghost@acme.test', password: 'guess 6' });
    assert.equal(
      sixth.status,
      429,
      'a 401 here, where a real account gets 429, tells an attacker the account does not exist',
    );
    assert.ok(textOf(sixth.text).includes('Too many attempts'));
  });

  test('a second authorization in the same browser session, for another workspace, leaves the first grant and its token where they were', async () => {
    const jar = new CookieJar();
    const first = await authorize(as, client, {
      redirectUri,
      scopes: ['forms:read'],
      resource: found.resource,
      email: OWNER,
      password: PASSWORD,
      workspace: 'acme',
      jar,
    });
    const t1 = await exchangeCode(as, client, first, { redirectUri, resource: found.resource });
    secrets.push(t1.access_token, t1.refresh_token);
    assert.equal((await api(base, t1.access_token, 'GET', '/api/v1')).body.workspace.slug, 'acme');

    // Signed in already: straight to the consent page, asking for more, in the other workspace.
    const request = await authorizationUrl(as, client, {
      redirectUri,
      scopes: ['forms:read', 'responses:read'],
      resource: found.resource,
    });
    const page = await navigate(jar, request.url.href, {}, { stopAt: redirectUri });
    assert.equal(page.status, 200, `${page.status} ${page.url}`);
    const done = await consent(jar, page, { workspace: 'side', stopAt: redirectUri });
    const t2 = await exchangeCode(
      as,
      client,
      { ...request, callback: new URL(done.location) },
      { redirectUri, resource: found.resource },
    );
    secrets.push(t2.access_token, t2.refresh_token);
    assert.equal((await api(base, t2.access_token, 'GET', '/api/v1')).body.workspace.slug, 'side');

    await new Promise((resolve) => setTimeout(resolve, WITHIN)); // past every credential cache
    const again = await api(base, t1.access_token, 'GET', '/api/v1');
    assert.equal(again.status, 200, again.text);
    assert.equal(
      again.body.workspace.slug,
      'acme',
      'a token granted for acme must not start acting in another workspace',
    );
    const acme = (await cliOk(db.url, ['grant', 'list', '--workspace', 'acme', '--json'])).json.grants;
    const side = (await cliOk(db.url, ['grant', 'list', '--workspace', 'side', '--json'])).json.grants;
    // The newest of this client's grants in side (an earlier test may have connected it there too; the list is oldest first).
    const sideGrant = side.filter((g) => g.clientId === client.client_id && !g.revokedAt).at(-1);
    assert.ok(sideGrant, 'the side grant is listed');
    assert.deepEqual(
      [...sideGrant.scopes].sort(),
      ['forms:read', 'responses:read'],
      'the listed scopes are all the scopes the grant holds',
    );
    assert.ok(
      acme.some((g) => g.clientId === client.client_id && !g.revokedAt && g.scopes.includes('forms:read')),
      'the acme grant is still listed',
    );
  });

  test('after an admin revokes a grant, the person can connect the app again from the same browser', async () => {
    const other = await registerClient(as, { redirectUri, name: 'Reconnecting app' });
    const jar = new CookieJar();
    const flow = await authorize(as, other, {
      redirectUri,
      scopes: ['forms:read'],
      resource: found.resource,
      email: OWNER,
      password: PASSWORD,
      workspace: 'acme',
      jar,
    });
    const first = await exchangeCode(as, other, flow, { redirectUri, resource: found.resource });
    secrets.push(first.access_token, first.refresh_token);
    const grant = (await cliOk(db.url, ['grant', 'list', '--workspace', 'acme', '--json'])).json.grants.find(
      (g) => g.clientId === other.client_id,
    );
    await cliOk(db.url, ['grant', 'revoke', '--id', grant.id, '--json']);
    await refusedWithin(first.access_token, 'the revoked grant is refused');

    const request = await authorizationUrl(as, other, {
      redirectUri,
      scopes: ['forms:read'],
      resource: found.resource,
    });
    let res = await navigate(jar, request.url.href, {}, { stopAt: redirectUri });
    if (res.status === 200) res = await consent(jar, res, { workspace: 'acme', stopAt: redirectUri }); // consent asked again: fine
    assert.ok(res.location?.startsWith(redirectUri), `${res.status} ${res.url}`);
    const second = await exchangeCode(
      as,
      other,
      { ...request, callback: new URL(res.location) },
      { redirectUri, resource: found.resource },
    );
    secrets.push(second.access_token, second.refresh_token);
    const call = await callTool(base, second.access_token, 'list_forms');
    assert.equal(call.status, 200, `the new connection works: ${call.text}`);
  });

  test('no token, code or password reaches a log line', () => {
    assert.ok(secrets.length > 20);
    for (const line of logs.flat()) {
      assert.ok(!line.includes(PASSWORD), `a log line shows the password: ${line}`);
      for (const secret of secrets) assert.ok(!line.includes(secret), `a log line shows a secret: ${line}`);
    }
  });
});
