/**
 * Helpers for the OAuth tests (node --test, ESM): they run the BUILT service (dist/) as a child
 * process on a fresh PostgreSQL database, drive the sign-in and consent pages like a browser
 * (cookies, forms, redirects), and speak OAuth through oauth4webapi, a standard client library.
 * Not a test file itself (node --test only runs *.test.mjs here).
 */
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as oauth from 'oauth4webapi';
import pg from 'pg';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const SCOPES = [
  'forms:read',
  'forms:write',
  'responses:read',
  'responses:write',
  'webhooks:read',
  'webhooks:write',
];
/** oauth4webapi insists on https; the test instance is plain http on loopback. */
export const insecure = { [oauth.allowInsecureRequests]: true };
/** The webhook secret key of the built instances and the CLI, in production (which refuses to start without one). */
const WEBHOOK_SECRET_KEY = Buffer.alloc(32, 'formwork test key').toString('base64');

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` until it is true; fails after `timeoutMs`. Resolves with the time it took. */
export async function waitUntil(check, timeoutMs, what) {
  const start = Date.now();
  for (;;) {
    if (await check()) return Date.now() - start;
    if (Date.now() - start > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}`);
    await sleep(100);
  }
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL, the build, the CLI and the service
// ---------------------------------------------------------------------------------------------

/**
 * A fresh database: on the machine's PostgreSQL (TEST_DATABASE_SERVER), or, when none answers, on
 * the embedded PostgreSQL of the build started as a process of its own (so it behaves like a
 * server: instances and the CLI connect to it, and may restart). As the jest tiers do.
 */
export async function createDatabase(label) {
  const server = process.env.TEST_DATABASE_SERVER ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const admin = new pg.Client({ connectionString: server, connectionTimeoutMillis: 3000 });
  try {
    await admin.connect();
  } catch {
    return embeddedDatabase(server);
  }
  const name = `formwork_oauth_${label}_${Date.now()}_${process.pid}`;
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(server);
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: server });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

async function embeddedDatabase(server) {
  ensureBuilt();
  const script = `require(${JSON.stringify(join(ROOT, 'dist/src/database/embedded-postgres.js'))}).startEmbeddedPostgres(undefined)
    .then((db) => { process.stdout.write(db.url + '\\n'); process.on('SIGTERM', () => db.stop().then(() => process.exit(0))); })`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      if (out.includes('\n')) resolve(out.trim());
    });
    child.once('exit', (code) => reject(new Error(`the embedded PostgreSQL exited (${code})`)));
  });
  process.stdout.write(`no PostgreSQL answered at ${new URL(server).host}: using the embedded PostgreSQL (PGlite)\n`);
  return {
    name: 'embedded',
    url,
    async drop() {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    },
  };
}

function newestMtime(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/** Builds dist/ when it is missing or older than the sources (`npm test` builds first; this is for direct runs). */
export function ensureBuilt() {
  const main = join(ROOT, 'dist', 'src', 'main.js');
  const built = existsSync(main) ? statSync(main).mtimeMs : 0;
  if (built >= Math.max(newestMtime(join(ROOT, 'src')), newestMtime(join(ROOT, 'migrations')))) return;
  try {
    execFileSync(
      process.execPath,
      [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'],
      { cwd: ROOT, stdio: 'pipe' },
    );
  } catch (err) {
    throw new Error(`dist/ is older than src/ and \`npm run build\` failed:\n${err.stdout ?? ''}${err.stderr ?? ''}`, {
      cause: err,
    });
  }
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** The admin CLI of the build: `node dist/src/cli/main.js ...args`, `input` written to its stdin. */
export function cli(databaseUrl, args, { input } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(ROOT, 'dist', 'src', 'cli', 'main.js'), ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl, NODE_ENV: 'production', WEBHOOK_SECRET_KEY },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.on('error', reject);
    child.on('close', (code) => {
      let json;
      try {
        json = JSON.parse(stdout);
      } catch {
        json = undefined;
      }
      resolve({ code, stdout, stderr, json });
    });
    child.stdin.on('error', () => undefined); // the CLI may exit before reading stdin
    child.stdin.end(input ?? '');
  });
}

/** The CLI, failing the test with its output unless it exits 0. */
export async function cliOk(databaseUrl, args, opts) {
  const r = await cli(databaseUrl, args, opts);
  if (r.code !== 0) throw new Error(`cli ${args.join(' ')} exited ${r.code}:\n${r.stdout}${r.stderr}`);
  return r;
}

/**
 * A fresh database (createDatabase), migrated, with `workspaces` created in order (each with its
 * owner), then `members` added in order, then the `passwords` set, all at once, with
 * `user set-password --password-stdin`: each value is written to stdin as given (the CLI drops one
 * trailing newline, as a shell's `echo "$PW" |` adds). Resolves with createDatabase's handle; a
 * failing step drops the database before rethrowing.
 */
export async function seededDatabase(label, { workspaces = [], members = [], passwords = {} } = {}) {
  const db = await createDatabase(label);
  try {
    await cliOk(db.url, ['migrate', '--json']);
    for (const { name, slug, plan, ownerEmail } of workspaces) {
      await cliOk(db.url, [
        'workspace',
        'create',
        '--name',
        name,
        '--slug',
        slug,
        '--plan',
        plan,
        '--owner-email',
        ownerEmail,
        '--json',
      ]);
    }
    for (const { workspace, email, role } of members) {
      await cliOk(db.url, ['member', 'add', '--workspace', workspace, '--email', email, '--role', role, '--json']);
    }
    await Promise.all(
      Object.entries(passwords).map(([email, input]) =>
        cliOk(db.url, ['user', 'set-password', '--email', email, '--password-stdin', '--json'], { input }),
      ),
    );
  } catch (err) {
    // The caller never gets the handle, so its after() cannot drop it.
    await db.drop().catch(() => undefined);
    throw err;
  }
  return db;
}

const running = new Set();
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * The built service (node dist/src/main.js) on a free port of 127.0.0.1, PUBLIC_URL its own
 * address unless given. Resolves once /healthz answers.
 */
export async function startInstance(databaseUrl, { port, publicUrl, env = {} } = {}) {
  port ??= await freePort();
  const base = publicUrl ?? `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, [join(ROOT, 'dist', 'src', 'main.js')], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: databaseUrl,
      PUBLIC_URL: base,
      PORT: String(port),
      NODE_ENV: 'production',
      WEBHOOK_SECRET_KEY,
      BOOTSTRAP_DEMO: 'false',
      DATABASE_POOL_SIZE: '4',
      LOG_LEVEL: 'info',
      // One test client sends everything from one address: these tests are not about budgets.
      RATE_LIMIT_CREDENTIAL_PER_MIN: '100000',
      RATE_LIMIT_IP_PER_MIN: '100000',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  const lines = [];
  let partial = '';
  const keep = (chunk) => {
    const parts = (partial + chunk.toString()).split('\n');
    partial = parts.pop() ?? '';
    lines.push(...parts.filter((l) => l.length > 0));
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise((resolve) => child.on('exit', (code) => (running.delete(child), resolve(code))));
  const alive = () => child.exitCode === null && child.signalCode === null;
  const instance = {
    port,
    base,
    origin: `http://127.0.0.1:${port}`,
    lines,
    async stop(graceMs = 10_000) {
      if (!alive()) return exited;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
  const until = Date.now() + 30_000;
  for (;;) {
    if (!alive()) throw new Error(`the service exited during start-up:\n${lines.join('\n')}`);
    const up = await fetch(`${instance.origin}/healthz`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (up) return instance;
    if (Date.now() > until) {
      await instance.stop(1000);
      throw new Error(`the service did not answer /healthz within 30 s:\n${lines.join('\n')}`);
    }
    await sleep(100);
  }
}

/**
 * An HTTPS server on 127.0.0.1 with a self-signed certificate made here (openssl), to serve client
 * metadata documents: the service trusts it when started with NODE_EXTRA_CA_CERTS=`caFile` (and
 * OAUTH_CIMD_ALLOW_PRIVATE_URLS, as it is on loopback). `serve(path, json)` answers `json` at `path`
 * (max-age=300) and returns its URL; `fetched` counts the requests per path.
 */
export async function startDocumentServer() {
  const dir = mkdtempSync(join(tmpdir(), 'formwork-docs-'));
  const key = join(dir, 'key.pem');
  const caFile = join(dir, 'cert.pem');
  const args = ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', caFile, '-days', '1'];
  const subject = ['-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'];
  execFileSync('openssl', [...args, ...subject], { stdio: 'pipe' });
  const documents = new Map(); // path -> { status, headers, body } | 'hang'
  const fetched = new Map();
  const server = createHttpsServer({ key: readFileSync(key), cert: readFileSync(caFile) }, (req, res) => {
    const path = new URL(req.url, 'https://x').pathname;
    fetched.set(path, (fetched.get(path) ?? 0) + 1);
    const doc = documents.get(path);
    if (doc === 'hang') return; // never answers
    if (!doc) return res.writeHead(404).end();
    res.writeHead(doc.status, doc.headers).end(doc.body);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `https://127.0.0.1:${server.address().port}`;
  return {
    origin,
    caFile,
    fetched,
    /** Serves `document` (an object as JSON, or a raw string) at `path`; returns its URL. */
    serve(path, document, { status = 200, headers = { 'cache-control': 'max-age=300' } } = {}) {
      const body = typeof document === 'string' ? document : JSON.stringify(document);
      documents.set(path, { status, headers: { 'content-type': 'application/json', ...headers }, body });
      return `${origin}${path}`;
    },
    /** `path` never answers. */
    hang(path) {
      documents.set(path, 'hang');
      return `${origin}${path}`;
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

// ---------------------------------------------------------------------------------------------
// A browser in miniature: cookies, redirects, HTML forms
// ---------------------------------------------------------------------------------------------

/** Cookies of one user agent on one host (ports are ignored, as browsers do), with paths and expiry. */
export class CookieJar {
  #cookies = new Map(); // `${name};${path}` -> { name, value, path }

  store(url, response) {
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';').map((s) => s.trim());
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq);
      const value = pair.slice(eq + 1);
      let path = url.pathname.replace(/\/[^/]*$/, '') || '/';
      let expired = false;
      for (const attr of attrs) {
        const [k, v = ''] = attr.split('=');
        const key = k.trim().toLowerCase();
        if (key === 'path' && v.startsWith('/')) path = v;
        if (key === 'max-age' && Number(v) <= 0) expired = true;
        if (key === 'expires' && Date.parse(v) <= Date.now()) expired = true;
      }
      const id = `${name};${path}`;
      if (expired) this.#cookies.delete(id);
      else this.#cookies.set(id, { name, value, path });
    }
  }

  header(url) {
    const matches = [...this.#cookies.values()]
      .filter((c) => url.pathname === c.path || url.pathname.startsWith(c.path.endsWith('/') ? c.path : `${c.path}/`))
      .sort((a, b) => b.path.length - a.path.length);
    return matches.map((c) => `${c.name}=${c.value}`).join('; ');
  }

  names() {
    return [...this.#cookies.values()].map((c) => c.name);
  }
}

/** One request as a browser sends it (cookies, a form body, no automatic redirects). */
export async function browse(jar, url, { method = 'GET', form, headers = {} } = {}) {
  const u = new URL(url);
  const h = { accept: 'text/html,application/xhtml+xml', ...headers };
  const cookie = jar.header(u);
  if (cookie) h.cookie = cookie;
  let body;
  if (form) {
    body = new URLSearchParams(form).toString();
    h['content-type'] = 'application/x-www-form-urlencoded';
    h.origin = u.origin;
  }
  const res = await fetch(u, { method, headers: h, body, redirect: 'manual' });
  jar.store(u, res);
  const text = await res.text();
  const location = res.headers.get('location');
  return {
    status: res.status,
    headers: res.headers,
    text,
    url: u.href,
    location: location ? new URL(location, u).href : undefined,
  };
}

/**
 * A request, then its redirects (GET), as a browser follows them; stops at a page, or at a
 * redirect to `stopAt` (the client's redirect URI, which the "browser" does not load).
 * `rewrite` may send a step to another instance (a load balancer's choice).
 */
export async function navigate(jar, url, opts = {}, { stopAt, rewrite = (u) => u } = {}) {
  let res = await browse(jar, rewrite(url), opts);
  const chain = [res];
  while (res.location && res.status >= 300 && res.status < 400) {
    if (stopAt && res.location.startsWith(stopAt)) break;
    if (chain.length > 12)
      throw new Error(`too many redirects: ${chain.map((r) => `${r.status} ${r.url}`).join(' -> ')}`);
    res = await browse(jar, rewrite(res.location));
    chain.push(res);
  }
  res.chain = chain;
  return res;
}

const ENTITIES = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };
export function decodeEntities(s) {
  return s.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (m, e) => {
    if (e[0] === '#')
      return String.fromCodePoint(e[1].toLowerCase() === 'x' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10));
    return ENTITIES[e.toLowerCase()] ?? m;
  });
}

function attributes(s) {
  const out = {};
  const re = /([^\s"'=<>/]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?/g;
  for (const m of s.matchAll(re)) out[m[1].toLowerCase()] = decodeEntities(m[2] ?? m[3] ?? m[4] ?? '');
  return out;
}

/** The visible text of a page, tags removed, whitespace collapsed. */
export function textOf(html) {
  return decodeEntities(
    html
      .replace(/<(script|style)\b[\s\S]*?<\/\1>/gi, ' ')
      .replace(/<[^>]+>/g, ' ')
      .replace(/\s+/g, ' '),
  ).trim();
}

/** The forms of a page: method, action, inputs (with type, value, checked) and buttons. */
export function parseForms(html) {
  return [...html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/gi)].map(([, attrs, inner]) => {
    const a = attributes(attrs);
    return {
      method: (a.method ?? 'get').toLowerCase(),
      action: a.action,
      inputs: [...inner.matchAll(/<input\b([^>]*)>/gi)].map(([, i]) => {
        const ia = attributes(i);
        return {
          name: ia.name,
          type: (ia.type ?? 'text').toLowerCase(),
          value: ia.value ?? '',
          checked: 'checked' in ia,
          attrs: ia,
        };
      }),
      buttons: [...inner.matchAll(/<button\b([^>]*)>([\s\S]*?)<\/button>/gi)].map(([, b, label]) => ({
        ...attributes(b),
        text: textOf(label),
      })),
    };
  });
}

/** The form whose action ends with `suffix` (e.g. "/login"), or a failure showing the page. */
export function formEndingWith(page, suffix) {
  const form = parseForms(page.text).find((f) => f.action?.endsWith(suffix));
  if (!form)
    throw new Error(
      `no form posting to *${suffix} on ${page.url} (status ${page.status}):\n${textOf(page.text).slice(0, 800)}`,
    );
  return form;
}

/** What a browser would send for `form` (hidden and text fields, checked radios and boxes), with `values` typed in. */
export function formFields(form, values = {}) {
  const fields = {};
  for (const input of form.inputs) {
    if (!input.name || ['submit', 'button', 'image', 'reset', 'file'].includes(input.type)) continue;
    if (['radio', 'checkbox'].includes(input.type) && !input.checked) continue;
    fields[input.name] = input.value;
  }
  return { ...fields, ...values };
}

// ---------------------------------------------------------------------------------------------
// OAuth, as a client that knows nothing but the API's address
// ---------------------------------------------------------------------------------------------

/**
 * Discovery the way an MCP client does it: the 401 of GET /api/v1 names the protected resource
 * metadata (RFC 9728), which names the authorization server, whose metadata (RFC 8414) is read
 * with oauth4webapi.
 */
export async function discover(apiBase) {
  const unauthorized = await fetch(`${apiBase}/api/v1`);
  const challenge = unauthorized.headers.get('www-authenticate') ?? '';
  const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)?.[1];
  if (unauthorized.status !== 401 || !metadataUrl) {
    throw new Error(
      `GET /api/v1 without a token answered ${unauthorized.status} with WWW-Authenticate: ${challenge || '(none)'}`,
    );
  }
  const resourceUrl = new URL(`${apiBase}/api/v1`);
  const resourceServer = await oauth.processResourceDiscoveryResponse(resourceUrl, await fetch(metadataUrl));
  const issuer = new URL(resourceServer.authorization_servers[0]);
  const as = await oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }),
  );
  return { status: unauthorized.status, challenge, metadataUrl, resourceServer, as, resource: resourceServer.resource };
}

/** RFC 7591 registration of a public client (no secret: PKCE protects the code). */
export async function registerClient(as, { redirectUri, name }) {
  const res = await oauth.dynamicClientRegistrationRequest(
    as,
    {
      redirect_uris: [redirectUri],
      client_name: name,
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    },
    insecure,
  );
  return oauth.processDynamicClientRegistrationResponse(res);
}

/** The authorization request URL with PKCE S256 and a state; `extra` adds or (with undefined) removes parameters. */
export async function authorizationUrl(as, client, { redirectUri, scopes, resource, extra = {} }) {
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const url = new URL(as.authorization_endpoint);
  const params = {
    response_type: 'code',
    client_id: client.client_id,
    redirect_uri: redirectUri,
    scope: scopes.join(' '),
    state,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    ...(resource ? { resource } : {}),
    ...extra,
  };
  for (const [k, v] of Object.entries(params)) if (v !== undefined) url.searchParams.set(k, v);
  return { url, verifier, state };
}

/** Signs in on the sign-in page `page` (the form posting to .../login). Resolves with the page that follows. */
export async function signIn(jar, page, { email, password, csrf, rewrite }) {
  const form = formEndingWith(page, '/login');
  const fields = formFields(form, { email, password });
  if (csrf !== undefined) fields.csrf = csrf;
  if (csrf === null) delete fields.csrf;
  return navigate(jar, new URL(form.action, page.url).href, { method: 'POST', form: fields }, { rewrite });
}

/** Allows (or denies) on the consent page `page`, picking `workspace`. Resolves where the browser ends up. */
export async function consent(jar, page, { workspace, decision = 'allow', csrf, stopAt, rewrite }) {
  const form = formEndingWith(page, decision === 'allow' ? '/confirm' : '/abort');
  const fields = formFields(form, workspace ? { workspace } : {});
  if (csrf === null) delete fields.csrf;
  else if (csrf !== undefined) fields.csrf = csrf;
  return navigate(jar, new URL(form.action, page.url).href, { method: 'POST', form: fields }, { stopAt, rewrite });
}

/**
 * The whole front channel: authorization request, sign-in page, consent page, back to the
 * client's redirect URI. Resolves with the callback URL, the PKCE verifier and state, and the pages seen.
 */
export async function authorize(
  as,
  client,
  { redirectUri, scopes, resource, email, password, workspace, jar = new CookieJar() },
) {
  const request = await authorizationUrl(as, client, { redirectUri, scopes, resource });
  const signInPage = await navigate(jar, request.url.href, {}, { stopAt: redirectUri });
  if (signInPage.status !== 200)
    throw new Error(
      `the authorization request ended at ${signInPage.status} ${signInPage.url}:\n${textOf(signInPage.text).slice(0, 800)}`,
    );
  const consentPage = await signIn(jar, signInPage, { email, password });
  if (consentPage.status !== 200)
    throw new Error(
      `signing in answered ${consentPage.status} at ${consentPage.url}:\n${textOf(consentPage.text).slice(0, 800)}`,
    );
  const done = await consent(jar, consentPage, { workspace, stopAt: redirectUri });
  if (!done.location?.startsWith(redirectUri))
    throw new Error(
      `consenting did not lead back to the client (${done.status} ${done.url}):\n${textOf(done.text).slice(0, 800)}`,
    );
  return { ...request, callback: new URL(done.location), signInPage, consentPage, jar };
}

/** Code for tokens (oauth4webapi), after validating the authorization response (state, iss). */
export async function exchangeCode(
  as,
  client,
  flow,
  { redirectUri, resource, verifier = flow.verifier, options = {} },
) {
  const params = oauth.validateAuthResponse(as, client, flow.callback, flow.state);
  const res = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, redirectUri, verifier, {
    ...insecure,
    ...options,
    ...(resource ? { additionalParameters: { resource } } : {}),
  });
  return oauth.processAuthorizationCodeResponse(as, client, res);
}

export async function refresh(as, client, refreshToken, options = {}) {
  const res = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), refreshToken, { ...insecure, ...options });
  return oauth.processRefreshTokenResponse(as, client, res);
}

/** Runs `fn`, which must throw an OAuth error response; resolves with that error. */
export async function oauthError(fn) {
  try {
    await fn();
  } catch (err) {
    if (err instanceof oauth.ResponseBodyError || err instanceof oauth.AuthorizationResponseError) return err;
    throw err;
  }
  throw new Error('expected an OAuth error response, but the request succeeded');
}

/**
 * A call to the API with an access token (oauth4webapi's protectedResourceRequest). A refusal
 * with a WWW-Authenticate challenge is returned, not thrown, with the parsed challenges.
 */
export async function api(base, accessToken, method, path, args, options = {}) {
  let response;
  let challenges;
  try {
    response = await oauth.protectedResourceRequest(
      accessToken,
      method,
      new URL(path, base),
      new Headers(args === undefined ? {} : { 'content-type': 'application/json' }),
      args === undefined ? undefined : JSON.stringify(args),
      { ...insecure, ...options },
    );
  } catch (err) {
    if (!(err instanceof oauth.WWWAuthenticateChallengeError)) throw err;
    response = err.response;
    challenges = err.cause;
  }
  const text = await response.text();
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: response.status, headers: response.headers, text, body, challenges };
}

export const callTool = (base, accessToken, name, args = {}, options) =>
  api(base, accessToken, 'POST', `/api/v1/tools/${name}`, args, options);

/** oauth4webapi's customFetch that sends every request to another instance (a load balancer's choice). */
export function via(origin) {
  return {
    [oauth.customFetch]: (url, init) => {
      const u = new URL(url);
      const target = new URL(origin);
      u.protocol = target.protocol;
      u.host = target.host;
      return fetch(u.href, init);
    },
  };
}

/**
 * An MCP SDK OAuthClientProvider (either SDK line), kept in memory: `redirectToAuthorization` only
 * records the URL, since the test is the browser. With `clientMetadataUrl` it is a CIMD client (v2).
 */
export class MemoryOAuthProvider {
  constructor({ redirectUrl, clientName, clientMetadataUrl } = {}) {
    this.redirect = redirectUrl;
    this.clientName = clientName;
    this.saved = {};
    this.authorizationUrl = undefined;
    if (clientMetadataUrl) this.clientMetadataUrl = clientMetadataUrl;
  }
  get redirectUrl() {
    return this.redirect;
  }
  get clientMetadata() {
    return {
      client_name: this.clientName,
      redirect_uris: [this.redirect],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.saved.client;
  }
  saveClientInformation(info) {
    this.saved.client = info;
  }
  tokens() {
    return this.saved.tokens;
  }
  saveTokens(tokens) {
    this.saved.tokens = tokens;
  }
  redirectToAuthorization(url) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier) {
    this.saved.verifier = verifier;
  }
  codeVerifier() {
    return this.saved.verifier;
  }
  // v2: the authorization server seen before the redirect, checked again on the callback (SEP-2352).
  saveDiscoveryState(state) {
    this.saved.discovery = state;
  }
  discoveryState() {
    return this.saved.discovery;
  }
}

export { oauth };
