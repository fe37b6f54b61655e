/**
 * The OAuth server against what anyone on the internet can do without an account: register
 * clients (bounded, always public, expiring when unused), send people through /oauth/authorize
 * (never an open redirector), fill login_failures with unknown emails (purged), and the headers of
 * oidc-provider's own pages. The BUILT service on a fresh PostgreSQL database, as test/oauth does.
 * Run: npm run --silent build && node --test test/oauth/
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import {
  authorizationUrl,
  authorize,
  callTool,
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
  refresh,
  registerClient,
  seededDatabase,
  signIn,
  startInstance,
  textOf,
  waitUntil,
} from './support.mjs';

const OWNER = 'joan@acme.test';
const PASSWORD = 'a sufficiently long passphrase';
const REDIRECT_URI = 'http://127.0.0.1:8976/callback'; // never loaded: the test reads the redirect
const OLD_FAILURES = 2_500; // more than two purge batches

/** What every page of the authorization server must send. */
function assertStrictPageHeaders(res, what) {
  const csp = res.headers.get('content-security-policy') ?? '';
  assert.match(csp, /default-src 'none'/, `${what}: CSP default-src 'none' (got "${csp}")`);
  assert.match(csp, /frame-ancestors 'none'/, `${what}: CSP frame-ancestors 'none'`);
  assert.match(csp, /base-uri 'none'/, `${what}: CSP base-uri 'none'`);
  assert.doesNotMatch(csp, /unsafe-eval|script-src[^;]*unsafe-inline/, `${what}: no unsafe scripts`);
  assert.equal(res.headers.get('x-content-type-options'), 'nosniff', `${what}: nosniff`);
}

/** A page of ours shown instead of a redirect: HTML, 4xx, no Location, the strict headers. */
function assertShownHere(res, what) {
  assert.equal(res.location, undefined, `${what}: no redirect (got ${res.status} to ${res.location})`);
  assert.equal(res.status, 400, `${what}: ${res.status}`);
  assert.match(res.headers.get('content-type') ?? '', /^text\/html/, what);
  assert.ok(!res.chain.some((r) => r.url.includes('/oauth/interaction/')), `${what}: no sign-in page`);
  assertStrictPageHeaders(res, what);
}

describe(
  'OAuth server hardening: registration, expiry, purge, no open redirect, page headers',
  { timeout: 240_000 },
  () => {
    let db;
    let sql; // a pg client on the test database
    let instance;
    let base;
    let as;
    let client;

    const register = (metadata) =>
      fetch(`${base}/oauth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify(metadata),
      });
    const clientRows = async () =>
      Number((await sql.query(`SELECT count(*) FROM oauth_models WHERE model = 'Client'`)).rows[0].count);
    const tokenRequest = (params) =>
      fetch(`${base}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: new URLSearchParams(params),
      });

    /** Authorization request, sign-in, consent page: resolves with the consent page and the request. */
    async function consentPageFor(forClient, { extra } = {}) {
      const jar = new CookieJar();
      const request = await authorizationUrl(as, forClient, {
        redirectUri: REDIRECT_URI,
        scopes: ['forms:read'],
        extra,
      });
      const signInPage = await navigate(jar, request.url.href, {}, { stopAt: REDIRECT_URI });
      assert.equal(signInPage.status, 200, textOf(signInPage.text).slice(0, 500));
      const page = await signIn(jar, signInPage, { email: OWNER, password: PASSWORD });
      assert.equal(page.status, 200, textOf(page.text).slice(0, 500));
      formEndingWith(page, '/confirm');
      return { jar, page, request };
    }

    before(async () => {
      ensureBuilt();
      db = await seededDatabase('hardening', {
        workspaces: [{ name: 'Acme', slug: 'acme', plan: 'pro', ownerEmail: OWNER }],
        passwords: { [OWNER]: `${PASSWORD}\n` },
      });
      sql = new pg.Client({ connectionString: db.url });
      await sql.connect();
      // What months of guessing unknown emails leave behind, and one failure whose lock window is still open.
      await sql.query(
        `INSERT INTO login_failures (email, failures, last_failure_at)
       SELECT 'ghost' || g || '@nowhere.test', 1 + g % 5, now() - interval '2 hours' - g * interval '1 minute' FROM generate_series(1, ${OLD_FAILURES}) g`,
      );
      await sql.query(
        `INSERT INTO login_failures (email, failures, last_failure_at) VALUES ('recent@nowhere.test', 5, now() - interval '5 minutes')`,
      );
      instance = await startInstance(db.url);
      base = instance.base;
      as = (await discover(base)).as;
      client = await registerClient(as, { redirectUri: REDIRECT_URI, name: 'Hardening test agent' });
    });

    after(async () => {
      await sql?.end();
      await instance?.stop();
      await db?.drop();
    });

    // -------------------------------------------------------------------------------------------
    // Item 6: bounded registrations, unused clients expire, old sign-in failures are purged
    // -------------------------------------------------------------------------------------------

    test('a 50 KB or deeply nested registration is refused with invalid_client_metadata, and nothing is stored', async () => {
      const before = await clientRows();
      for (const metadata of [
        { redirect_uris: [REDIRECT_URI], client_name: 'x'.repeat(50_000) },
        {
          redirect_uris: [REDIRECT_URI],
          client_name: 'Padded',
          client_uri: `https://example.test/${'p'.repeat(50_000)}`,
        },
        {
          redirect_uris: Array.from(
            { length: 1_000 },
            (_, i) => `http://127.0.0.1:8976/callback/${i}/${'r'.repeat(30)}`,
          ),
        },
      ]) {
        const res = await register(metadata);
        assert.equal(res.status, 400);
        const body = await res.json();
        assert.equal(body.error, 'invalid_client_metadata');
        assert.match(body.error_description, /at most 10000/);
      }
      // Under the size limit but nested 4,900 levels deep: refused by name, not a 500 (JSON.stringify overflowed).
      const deep = await fetch(new URL('/oauth/register', base), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: `{"redirect_uris":["${REDIRECT_URI}"],"client_name":"Deep","logo":${'['.repeat(4900)}${']'.repeat(4900)}}`,
      });
      assert.equal(deep.status, 400);
      const deepBody = await deep.json();
      assert.equal(deepBody.error, 'invalid_client_metadata');
      assert.match(deepBody.error_description, /^logo nests objects and arrays more than 16 levels deep/);
      const longName = await register({ redirect_uris: [REDIRECT_URI], client_name: 'n'.repeat(201) });
      assert.equal(longName.status, 400);
      assert.equal((await longName.json()).error, 'invalid_client_metadata');
      assert.equal(await clientRows(), before, 'no client was stored');
      // A normal registration still works.
      assert.equal((await register({ redirect_uris: [REDIRECT_URI], client_name: 'n'.repeat(200) })).status, 201);
    });

    test("text PostgreSQL cannot store (NUL, a lone surrogate) is refused in OAuth's formats, nothing stored, no error line", async () => {
      const before = await clientRows();
      const linesBefore = instance.lines.length;
      const rawRegister = (json) =>
        fetch(`${base}/oauth/register`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: json,
        });
      for (const [json, field] of [
        [`{"redirect_uris":["${REDIRECT_URI}"],"client_name":"a\\u0000b"}`, 'client_name'],
        [
          `{"redirect_uris":["${REDIRECT_URI}"],"client_name":"ok","client_uri":"https://x.example/\\ud800"}`,
          'client_uri',
        ],
        [`{"redirect_uris":["${REDIRECT_URI}"],"client_name":"ok\\udc00"}`, 'client_name'],
      ]) {
        const res = await rawRegister(json);
        assert.equal(res.status, 400, json);
        assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
        assert.equal(res.headers.get('cache-control'), 'no-store');
        const body = await res.json();
        assert.equal(body.error, 'invalid_client_metadata');
        assert.match(body.error_description, new RegExp(`^${field} must be well-formed text`));
      }
      // As a form-urlencoded body too, which oidc-provider refuses on this endpoint: still no 500.
      assert.equal(
        (
          await fetch(`${base}/oauth/register`, {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: 'client_name=a%00b',
          })
        ).status,
        400,
      );
      assert.equal(await clientRows(), before, 'no client was stored');
      // The other endpoints: RFC 6749 invalid_request; the authorization endpoint, a page.
      for (const [path, form] of [
        ['/oauth/token', `grant_type=authorization_code&code=a%00b&client_id=${client.client_id}&code_verifier=x`],
        ['/oauth/token', `grant_type=refresh_token&refresh_token=a%00b&client_id=${client.client_id}`],
        ['/oauth/revoke', `token=a%00b&client_id=${client.client_id}`],
      ]) {
        const res = await fetch(`${base}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: form,
        });
        assert.equal(res.status, 400, `${path} ${form}`);
        assert.equal((await res.json()).error, 'invalid_request');
      }
      const page = await fetch(`${base}/oauth/authorize?client_id=a%00b&response_type=code`, { redirect: 'manual' });
      assert.equal(page.status, 400);
      assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
      assertStrictPageHeaders(page, 'the refusal page');
      assert.match(textOf(await page.text()), /must be well-formed text/);
      const errors = instance.lines.slice(linesBefore).filter((l) => /"level":"(error|fatal)"/.test(l));
      assert.deepEqual(errors, [], 'no error line');
      // A request whose body was read for the check still reaches the OAuth server whole.
      assert.equal((await register({ redirect_uris: [REDIRECT_URI], client_name: 'Read then replayed' })).status, 201);
    });

    test('a registered client expires 30 days after its last use: each use moves the date, and an expired one is unknown', async () => {
      const idle = await registerClient(as, { redirectUri: REDIRECT_URI, name: 'Soon idle app' });
      const expiry = async () =>
        (
          await sql.query(`SELECT expires_at - now() AS left FROM oauth_models WHERE model = 'Client' AND id = $1`, [
            idle.client_id,
          ])
        ).rows[0]?.left;
      const daysLeft = async () => {
        const left = await expiry();
        assert.ok(left, 'the client is stored with an expiry');
        return (left.days ?? 0) + (left.hours ?? 0) / 24 + (left.minutes ?? 0) / 1440;
      };
      const fresh = await daysLeft();
      assert.ok(fresh > 29.99 && fresh <= 30, `a new registration lives 30 days (${fresh} left)`);

      const flow = await authorize(as, idle, {
        redirectUri: REDIRECT_URI,
        scopes: ['forms:read'],
        email: OWNER,
        password: PASSWORD,
        workspace: 'acme',
      });
      const tokens = await exchangeCode(as, idle, flow, { redirectUri: REDIRECT_URI });

      // Unused for 29 days: one day left. A refresh is a use: 30 days again.
      await sql.query(
        `UPDATE oauth_models SET expires_at = now() + interval '1 day' WHERE model = 'Client' AND id = $1`,
        [idle.client_id],
      );
      const refreshed = await refresh(as, idle, tokens.refresh_token);
      const after = await daysLeft();
      assert.ok(after > 29.99, `used: 30 days from now (${after} left)`);

      // Unused for 30 days: gone for the token endpoint and for the authorization endpoint.
      await sql.query(
        `UPDATE oauth_models SET expires_at = now() - interval '1 minute' WHERE model = 'Client' AND id = $1`,
        [idle.client_id],
      );
      const res = await tokenRequest({
        grant_type: 'refresh_token',
        refresh_token: refreshed.refresh_token,
        client_id: idle.client_id,
      });
      assert.equal(res.status, 401);
      assert.equal((await res.json()).error, 'invalid_client');
      const request = await authorizationUrl(as, idle, { redirectUri: REDIRECT_URI, scopes: ['forms:read'] });
      const page = await navigate(new CookieJar(), request.url.href, {}, { stopAt: REDIRECT_URI });
      assertShownHere(page, 'an expired client');
      assert.match(textOf(page.text), /client/i);
    });

    test('the migration gives clients registered before 30 days, and makes a confidential one public (its secret dropped)', async () => {
      const legacy = {
        client_id: 'legacy-client',
        client_secret: 'a-secret-issued-by-the-old-version',
        client_secret_expires_at: 0,
        client_id_issued_at: 1795000000,
        client_name: 'Legacy app',
        token_endpoint_auth_method: 'client_secret_basic',
        redirect_uris: [REDIRECT_URI],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
      };
      await sql.query(`INSERT INTO oauth_models (model, id, payload) VALUES ('Client', 'legacy-client', $1::jsonb)`, [
        JSON.stringify(legacy),
      ]);
      await sql.query(`DELETE FROM schema_migrations WHERE name = 'OAuthClientExpiry1795400000000'`);
      await cliOk(db.url, ['migrate', '--json']);
      const { rows } = await sql.query(
        `SELECT payload, expires_at > now() + interval '29 days' AND expires_at <= now() + interval '30 days' AS thirty FROM oauth_models WHERE model = 'Client' AND id = 'legacy-client'`,
      );
      assert.equal(rows[0].thirty, true, 'expires in 30 days');
      assert.equal(rows[0].payload.token_endpoint_auth_method, 'none');
      assert.equal(rows[0].payload.client_secret, undefined, 'the stored secret is gone');
      // And the server accepts it as a public client.
      const request = await authorizationUrl(
        as,
        { client_id: 'legacy-client' },
        { redirectUri: REDIRECT_URI, scopes: ['forms:read'] },
      );
      const page = await navigate(new CookieJar(), request.url.href, {}, { stopAt: REDIRECT_URI });
      assert.equal(page.status, 200, textOf(page.text).slice(0, 300));
      formEndingWith(page, '/login');
    });

    test('old login_failures rows (unknown emails) are purged in batches; a failure within its lock window stays', async () => {
      const count = async (where) =>
        Number((await sql.query(`SELECT count(*) FROM login_failures WHERE ${where}`)).rows[0].count);
      // The service purges at start and every 10 minutes: the rows seeded before it started go.
      await waitUntil(
        async () => (await count(`email LIKE 'ghost%'`)) === 0,
        20_000,
        `the ${OLD_FAILURES} old failure rows are purged`,
      );
      assert.equal(
        await count(`email = 'recent@nowhere.test'`),
        1,
        'a failure 5 minutes old is kept (its lock is still on)',
      );
      const recent = (await sql.query(`SELECT failures FROM login_failures WHERE email = 'recent@nowhere.test'`))
        .rows[0];
      assert.equal(recent.failures, 5);
    });

    // -------------------------------------------------------------------------------------------
    // Item 8: errors before any Formwork page are shown here, never redirected to the client
    // -------------------------------------------------------------------------------------------

    test('an authorization request without PKCE (or with plain, or another resource, or prompt=none) gets a Formwork page, not a 303 to the redirect URI', async () => {
      const cases = [
        [{ code_challenge: undefined, code_challenge_method: undefined }, /PKCE/i],
        [{ code_challenge_method: 'plain' }, /code_challenge_method|PKCE/i],
        [{ resource: 'https://other-api.example/v1' }, /resource|target|issues tokens only/i],
        [{ prompt: 'none' }, /login|sign/i],
      ];
      for (const [extra, says] of cases) {
        const request = await authorizationUrl(as, client, {
          redirectUri: REDIRECT_URI,
          scopes: ['forms:read'],
          extra,
        });
        const res = await navigate(new CookieJar(), request.url.href, {}, { stopAt: REDIRECT_URI });
        const what = JSON.stringify(extra);
        assertShownHere(res, what);
        const text = textOf(res.text);
        assert.match(text, /request was refused/, `${what}: our page says what happened`);
        assert.match(text, says, `${what}: ${text.slice(0, 300)}`);
        assert.ok(res.text.includes('<main>'), `${what}: our look (the page shell)`);
        assert.ok(!res.text.includes(request.state), `${what}: the state is not reflected`);
      }
      // The same from a browser already signed in (a session cookie): still no redirect.
      const { jar } = await consentPageFor(client);
      const request = await authorizationUrl(as, client, {
        redirectUri: REDIRECT_URI,
        scopes: ['forms:read'],
        extra: { code_challenge: undefined, code_challenge_method: undefined },
      });
      assertShownHere(await navigate(jar, request.url.href, {}, { stopAt: REDIRECT_URI }), 'signed in, no PKCE');
    });

    test('Deny on the consent page still sends the person back to the client with access_denied', async () => {
      const { jar, page, request } = await consentPageFor(client);
      const denied = await consent(jar, page, { decision: 'deny', stopAt: REDIRECT_URI });
      assert.equal(denied.status, 303);
      assert.ok(denied.location?.startsWith(REDIRECT_URI), `back at the client: ${denied.status} ${denied.url}`);
      const refused = await oauthError(async () =>
        oauth.validateAuthResponse(as, client, new URL(denied.location), request.state),
      );
      assert.equal(refused.error, 'access_denied');
    });

    test('the consent page shows the host the person will be sent back to', async () => {
      const other = await registerClient(as, {
        redirectUri: 'http://localhost:47321/oauth/done',
        name: 'Elsewhere app',
      });
      const jar = new CookieJar();
      const request = await authorizationUrl(as, other, {
        redirectUri: 'http://localhost:47321/oauth/done',
        scopes: ['forms:read'],
      });
      const signInPage = await navigate(jar, request.url.href, {}, { stopAt: 'http://localhost:47321/' });
      const page = await signIn(jar, signInPage, { email: OWNER, password: PASSWORD });
      formEndingWith(page, '/confirm');
      assert.match(textOf(page.text), /sent back to localhost:47321\b/);
      const ours = await consentPageFor(client);
      assert.match(textOf(ours.page.text), /sent back to 127\.0\.0\.1:8976\b/);
    });

    // -------------------------------------------------------------------------------------------
    // Item 9: every client is public, refresh tokens rotate, the metadata lists what works
    // -------------------------------------------------------------------------------------------

    test('a registration asking for client_secret_basic or client_secret_post is registered public: "none", and no secret', async () => {
      for (const method of ['client_secret_basic', 'client_secret_post', 'private_key_jwt', undefined]) {
        const res = await register({
          redirect_uris: [REDIRECT_URI],
          client_name: `Asks for ${method}`,
          token_endpoint_auth_method: method,
        });
        assert.equal(res.status, 201, `${method}: ${res.status}`);
        const body = await res.json();
        assert.equal(body.token_endpoint_auth_method, 'none', `${method}: the answer says none`);
        assert.equal(body.client_secret, undefined, `${method}: no secret`);
        assert.equal(body.client_secret_expires_at, undefined);
        assert.equal(body.registration_access_token, undefined, 'no registration access token (nothing uses it)');
        const stored = (
          await sql.query(`SELECT payload FROM oauth_models WHERE model = 'Client' AND id = $1`, [body.client_id])
        ).rows[0].payload;
        assert.equal(stored.token_endpoint_auth_method, 'none');
        assert.equal(stored.client_secret, undefined, `${method}: no secret stored`);
      }
      const hmac = await register({
        redirect_uris: [REDIRECT_URI],
        client_name: 'HMAC',
        id_token_signed_response_alg: 'HS256',
      });
      assert.equal(hmac.status, 400);
      assert.equal((await hmac.json()).error, 'invalid_client_metadata');
    });

    test('a client registered with client_secret_basic gets rotating refresh tokens: reusing a spent one revokes the grant', async () => {
      const res = await oauth.dynamicClientRegistrationRequest(
        as,
        {
          redirect_uris: [REDIRECT_URI],
          client_name: 'Secret-minded agent',
          token_endpoint_auth_method: 'client_secret_basic',
          grant_types: ['authorization_code', 'refresh_token'],
        },
        insecure,
      );
      const asked = await oauth.processDynamicClientRegistrationResponse(res);
      assert.equal(asked.token_endpoint_auth_method, 'none');
      assert.equal(asked.client_secret, undefined);
      const flow = await authorize(as, asked, {
        redirectUri: REDIRECT_URI,
        scopes: ['forms:read'],
        email: OWNER,
        password: PASSWORD,
        workspace: 'acme',
      });
      const first = await exchangeCode(as, asked, flow, { redirectUri: REDIRECT_URI });
      const second = await refresh(as, asked, first.refresh_token);
      assert.notEqual(second.refresh_token, first.refresh_token, 'the refresh token rotates');
      assert.equal((await callTool(base, second.access_token, 'list_forms')).status, 200);
      const reuse = await oauthError(() => refresh(as, asked, first.refresh_token));
      assert.equal(reuse.error, 'invalid_grant', 'the spent refresh token is refused');
      const newest = await oauthError(() => refresh(as, asked, second.refresh_token));
      assert.equal(newest.error, 'invalid_grant', 'and the whole grant is revoked');
      await waitUntil(
        async () => (await callTool(base, second.access_token, 'list_forms')).status === 401,
        5_000,
        'the access token of the revoked grant is refused',
      );
    });

    test('the metadata lists only what works: auth method none, no client_secret_*, no PAR, no end-session endpoint (and those endpoints answer 404)', async () => {
      for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
        const res = await fetch(`${base}${path}`);
        assert.equal(res.status, 200);
        const text = await res.text();
        const metadata = JSON.parse(text);
        assert.deepEqual(metadata.token_endpoint_auth_methods_supported, ['none'], path);
        assert.doesNotMatch(text, /client_secret|private_key_jwt/, `${path}: no secret-based client authentication`);
        for (const key of [
          'pushed_authorization_request_endpoint',
          'require_pushed_authorization_requests',
          'end_session_endpoint',
          'introspection_endpoint',
          'device_authorization_endpoint',
          'userinfo_endpoint',
        ]) {
          assert.equal(metadata[key], undefined, `${path}: no ${key}`);
        }
      }
      const par = await fetch(`${base}/oauth/par`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `client_id=${client.client_id}`,
      });
      assert.equal(par.status, 404, 'no PAR endpoint');
      assert.equal(
        (await fetch(`${base}/oauth/session/end`, { headers: { accept: 'application/json' } })).status,
        404,
        'no end-session endpoint',
      );
    });

    // -------------------------------------------------------------------------------------------
    // Item 10 (part): oidc-provider's own pages send a strict CSP and nosniff
    // -------------------------------------------------------------------------------------------

    test("oidc-provider's own error pages and HTML send a strict Content-Security-Policy and nosniff", async () => {
      const pages = [
        ['an unknown client', `${base}/oauth/authorize?client_id=no-such-client&response_type=code&scope=forms:read`],
        ['a resume without its cookie', `${base}/oauth/authorize/abcdefghijklmnopqrstu`],
        ['an unknown route, from a browser', `${base}/oauth/nothing-here`],
      ];
      for (const [what, url] of pages) {
        const res = await navigate(new CookieJar(), url);
        assert.ok(res.status >= 400, `${what}: ${res.status}`);
        assert.match(res.headers.get('content-type') ?? '', /^text\/html/, what);
        assert.equal(res.location, undefined, what);
        assertStrictPageHeaders(res, what);
      }
      // JSON answers of the authorization server too.
      const json = await tokenRequest({
        grant_type: 'refresh_token',
        refresh_token: 'nope',
        client_id: client.client_id,
      });
      assert.equal(json.headers.get('x-content-type-options'), 'nosniff');
    });

    test('response_mode=form_post still works under the CSP: its one script is allowed by hash, nothing else', async () => {
      const { jar, page } = await consentPageFor(client, { extra: { response_mode: 'form_post' } });
      const done = await consent(jar, page, { workspace: 'acme', stopAt: REDIRECT_URI });
      assert.equal(done.status, 200, `${done.status} ${done.url}`);
      const form = formEndingWith(done, REDIRECT_URI);
      assert.ok(
        form.inputs.some((i) => i.name === 'code' && i.value),
        'the code is posted to the client',
      );
      assertStrictPageHeaders(done, 'the form_post page');
      const script = /<script>([\s\S]*?)<\/script>/.exec(done.text)[1];
      const hash = createHash('sha256').update(script).digest('base64');
      const scriptSrc = /script-src([^;]*)/.exec(done.headers.get('content-security-policy'))[1].trim();
      assert.equal(scriptSrc, `'sha256-${hash}'`, 'only the auto-submit script may run');
    });
  },
);
