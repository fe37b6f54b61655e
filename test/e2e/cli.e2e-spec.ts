import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { runCli } from '../../src/cli/cli';
import { ensureBuilt, ROOT } from '../utils/cluster';
import { FormsService } from '../../src/forms/forms.service';
import { WorkspacesService } from '../../src/workspaces/workspaces.service';
import { createTestApp, testDatabaseUrl } from '../utils/create-test-app';
import { callTool } from '../utils/http';

const env = () => ({ DATABASE_URL: testDatabaseUrl(), NODE_ENV: 'test' });
const cli = async (...argv: string[]) => {
  const result = await runCli(argv, env());
  return { ...result, json: result.stdout ? JSON.parse(result.stdout) : undefined };
};

/**
 * The built CLI (node dist/src/cli/main.js) as an admin runs it: its own process, env and cwd;
 * killed after `timeout` ms (below the test's own timeout, so the test's cleanup still runs).
 */
function builtCli(
  argv: string[],
  options: { env: NodeJS.ProcessEnv; cwd?: string; timeout?: number },
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const env = { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: 'test', ...options.env };
    execFile(
      process.execPath,
      [join(ROOT, 'dist', 'src', 'cli', 'main.js'), ...argv],
      { env, cwd: options.cwd ?? ROOT, timeout: options.timeout ?? 50_000 },
      (err, stdout, stderr) => {
        done({ code: err ? Number(err.code ?? 1) : 0, stdout, stderr });
      },
    );
  });
}

const COMMANDS = [
  'migrate',
  'workspace create',
  'workspace embed-origins',
  'member add',
  'token create',
  'token list',
  'token revoke',
  'user set-password',
  'grant list',
  'grant revoke',
  'demo',
];

describe('admin CLI', () => {
  let app: NestFastifyApplication;
  const slug = `cli-${Date.now().toString(36)}`;

  beforeAll(async () => {
    app = await createTestApp();
  });
  afterAll(() => app.close());

  it('migrate --json reports that nothing is left to run', async () => {
    const out = await cli('migrate', '--json');
    expect(out.code).toBe(0);
    expect(out.json).toEqual({ migrations: [] });
  });

  it('creates a workspace, adds a member and creates, lists and revokes tokens, each --json printing one object', async () => {
    const ws = await cli(
      'workspace',
      'create',
      '--name',
      'Acme',
      '--slug',
      slug,
      '--plan',
      'pro',
      '--owner-email',
      'Boss@Acme.test',
      '--json',
    );
    expect(ws.code).toBe(0);
    expect(ws.stdout.trim().split('\n')).toHaveLength(1);
    expect(ws.json.workspace).toMatchObject({ slug, name: 'Acme', plan: 'pro' });
    expect(ws.json.owner).toMatchObject({ email: 'boss@acme.test', role: 'owner' });
    // The new owner has no password: a one-time link to set it, for the settings pages.
    expect(ws.json.setPasswordLink).toMatch(/^http:\/\/localhost:\d+\/settings\/set-password\/[A-Za-z0-9_-]{43}$/);

    const member = await cli(
      'member',
      'add',
      '--workspace',
      slug,
      '--email',
      'ed@acme.test',
      '--role',
      'editor',
      '--json',
    );
    expect(member.code).toBe(0);
    expect(member.json).toMatchObject({ workspace: slug, role: 'editor', user: { email: 'ed@acme.test' } });

    const created = await cli(
      'token',
      'create',
      '--workspace',
      slug,
      '--name',
      'ci',
      '--role',
      'viewer',
      '--scopes',
      'forms:read,responses:read',
      '--expires-in',
      '90d',
      '--json',
    );
    expect(created.code).toBe(0);
    expect(created.json).toMatchObject({
      id: expect.any(String),
      token: expect.stringMatching(/^fw_[0-9A-Za-z]{36}$/),
      role: 'viewer',
      scopes: ['forms:read', 'responses:read'],
    });
    const days = (new Date(created.json.expiresAt).getTime() - Date.now()) / 86_400_000;
    expect(Math.round(days)).toBe(90);

    const me = await request(app.getHttpServer()).get('/api/v1').set('Authorization', `Bearer ${created.json.token}`);
    expect(me.body).toMatchObject({ role: 'viewer', workspace: { slug } });

    const list = await cli('token', 'list', '--workspace', slug, '--json');
    expect(list.json.tokens).toHaveLength(1);
    expect(list.json.tokens[0]).toMatchObject({
      id: created.json.id,
      name: 'ci',
      prefix: created.json.token.slice(0, 7),
    });
    expect(list.stdout).not.toContain(created.json.token);

    const revoked = await cli('token', 'revoke', '--id', created.json.id, '--json');
    expect(revoked.code).toBe(0);
    expect(revoked.json.revokedAt).toEqual(expect.any(String));
  });

  it('refuses bad input with a JSON error and exit code 2, changing nothing', async () => {
    const bad = await cli(
      'workspace',
      'create',
      '--name',
      'X',
      '--slug',
      'Bad Slug!',
      '--plan',
      'gold',
      '--owner-email',
      'nope',
      '--json',
    );
    expect(bad.code).toBe(2);
    expect(bad.json.error.code).toBe('invalid_arguments');
    expect(bad.json.error.details.map((d: { path: string }) => d.path).sort()).toEqual([
      '--owner-email',
      '--plan',
      '--slug',
    ]);

    const unknown = await cli('token', 'create', '--workspace', slug, '--name', 'x', '--colour', 'red', '--json');
    expect(unknown.json.error.details).toEqual([{ path: '--colour', message: 'is not an option of this command' }]);

    const taken = await cli(
      'workspace',
      'create',
      '--name',
      'Again',
      '--slug',
      slug,
      '--plan',
      'free',
      '--owner-email',
      'a@b.test',
      '--json',
    );
    expect(taken.json.error.code).toBe('invalid_arguments');

    const missing = await cli('token', 'list', '--workspace', 'no-such-workspace', '--json');
    expect(missing.code).toBe(1);
    expect(missing.json.error.code).toBe('not_found');

    const human = await cli('frobnicate');
    expect(human.code).toBe(2);
    expect(human.stderr).toContain('Usage:');
  });

  it("sets, shows and clears the origins allowed to embed a workspace's forms, which the respondent page then sends", async () => {
    const form = await app.get(FormsService).create((await app.get(WorkspacesService).requireBySlug(slug)).id, {
      title: 'Embed me',
      blocks: [{ type: 'short_text', title: 'Q' }],
    });
    await app.get(FormsService).setStatus(form.id, 'published');
    const frameAncestors = async () => {
      const res = await request(app.getHttpServer()).get(`/f/${form.publicId}`);
      expect(res.status).toBe(200);
      return {
        csp: res.headers['content-security-policy'].split('; ').find((d: string) => d.startsWith('frame-ancestors')),
        xfo: res.headers['x-frame-options'],
      };
    };
    expect(await frameAncestors()).toEqual({ csp: "frame-ancestors 'none'", xfo: 'DENY' });

    const set = await cli(
      'workspace',
      'embed-origins',
      '--workspace',
      slug,
      '--set',
      'https://Shop.Example, https://blog.example:8443/',
      '--json',
    );
    expect(set.code).toBe(0);
    expect(set.stdout.trim().split('\n')).toHaveLength(1);
    expect(set.json).toEqual({ workspace: slug, embedOrigins: ['https://shop.example', 'https://blog.example:8443'] });
    expect(await frameAncestors()).toEqual({
      csp: 'frame-ancestors https://shop.example https://blog.example:8443',
      xfo: undefined,
    });

    const shown = await runCli(['workspace', 'embed-origins', '--workspace', slug], env());
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain('https://shop.example https://blog.example:8443');

    const cleared = await cli('workspace', 'embed-origins', '--workspace', slug, '--clear', '--json');
    expect(cleared.json).toEqual({ workspace: slug, embedOrigins: [] });
    expect(await frameAncestors()).toEqual({ csp: "frame-ancestors 'none'", xfo: 'DENY' });
  });

  it('refuses an embed origin that is not a plain https origin with exit code 2, keeping the list as it was', async () => {
    expect(
      (await cli('workspace', 'embed-origins', '--workspace', slug, '--set', 'https://keep.example', '--json')).code,
    ).toBe(0);
    for (const origin of [
      'https://a.example/path',
      'http://a.example',
      'https://*.example.com',
      "https://a.example;script-src 'unsafe-inline'",
    ]) {
      const bad = await cli(
        'workspace',
        'embed-origins',
        '--workspace',
        slug,
        '--set',
        `https://fine.example,${origin}`,
        '--json',
      );
      expect(bad.code).toBe(2);
      expect(bad.json.error).toMatchObject({
        code: 'invalid_arguments',
        hint: expect.stringContaining('https://'),
        details: [{ path: '/embedOrigins/1', message: expect.any(String) }],
      });
    }
    const both = await cli(
      'workspace',
      'embed-origins',
      '--workspace',
      slug,
      '--set',
      'https://a.example',
      '--clear',
      '--json',
    );
    expect(both.code).toBe(2);
    expect(both.json.error.details).toEqual([{ path: '--set', message: 'cannot be combined with --clear' }]);
    const human = await runCli(['workspace', 'embed-origins', '--workspace', slug, '--set', 'ftp://a.example'], env());
    expect(human.code).toBe(2);
    expect(human.stderr).toContain('hint:');
    const missing = await cli('workspace', 'embed-origins', '--workspace', 'no-such-workspace', '--clear', '--json');
    expect(missing.code).toBe(1);
    expect(missing.json.error.code).toBe('not_found');

    expect((await cli('workspace', 'embed-origins', '--workspace', slug, '--json')).json.embedOrigins).toEqual([
      'https://keep.example',
    ]);
  });

  it('sets a password from standard input only, refusing a short one', async () => {
    const set = (password: string | undefined, ...extra: string[]) =>
      runCli(
        ['user', 'set-password', '--email', 'boss@acme.test', ...extra, '--json'],
        env(),
        password === undefined ? {} : { readStdin: async () => `${password}\n` },
      );
    // A password that works once (the demo owner's printed one): the operator's new one lifts that.
    const must = `SELECT password_must_change AS must FROM users WHERE email = 'boss@acme.test'`;
    await app.get(DataSource).query(`UPDATE users SET password_must_change = true WHERE email = 'boss@acme.test'`);
    const ok = await set('a long enough passphrase', '--password-stdin');
    expect(ok.code).toBe(0);
    expect((await app.get(DataSource).query(must))[0].must).toBe(false);
    expect(JSON.parse(ok.stdout)).toMatchObject({ user: { email: 'boss@acme.test' }, passwordSet: true });
    expect(ok.stdout).not.toContain('passphrase');
    const short = await set('short', '--password-stdin');
    expect(short.code).toBe(2);
    expect(JSON.parse(short.stdout).error.code).toBe('invalid_arguments');
    const onArgv = await set(undefined, '--password', 'on-the-command-line');
    expect(onArgv.code).toBe(2);
    expect(
      JSON.parse(onArgv.stdout)
        .error.details.map((d: { path: string }) => d.path)
        .sort(),
    ).toEqual(['--password', '--password-stdin']);
    const unknown = await runCli(
      ['user', 'set-password', '--email', 'nobody@acme.test', '--password-stdin', '--json'],
      env(),
      { readStdin: async () => 'a long enough passphrase' },
    );
    expect(JSON.parse(unknown.stdout).error.code).toBe('not_found');
  });

  it('lists the connected apps of a workspace and refuses to revoke an unknown one', async () => {
    const list = await cli('grant', 'list', '--workspace', slug, '--json');
    expect(list.code).toBe(0);
    expect(list.json).toEqual({ grants: [] });
    const missing = await cli('grant', 'revoke', '--id', 'no-such-grant', '--json');
    expect(missing.code).toBe(1);
    expect(missing.json.error.code).toBe('not_found');
  });

  it('demo creates a workspace with forms and responses and prints a working token', async () => {
    const demo = await cli('demo', '--json');
    expect(demo.code).toBe(0);
    expect(demo.json.forms).toHaveLength(3);
    const forms = await callTool(app, demo.json.token, 'list_forms', {});
    expect(forms.body.total).toBe(3);
    const feedback = forms.body.forms.find((f: { title: string }) => f.title === 'Customer feedback');
    const page = await callTool(app, demo.json.token, 'list_responses', { publicId: feedback.publicId, limit: 200 });
    expect(page.body.total).toBeGreaterThanOrEqual(100);
    // A second run reuses the workspace and issues another token.
    const again = await cli('demo', '--json');
    expect(again.json).toMatchObject({ created: false, forms: demo.json.forms });
    expect(again.json.token).not.toBe(demo.json.token);
  });

  describe('--help and usage errors', () => {
    const tokenNames = async () =>
      (await cli('token', 'list', '--workspace', slug, '--json')).json.tokens.map((t: { name: string }) => t.name);

    it('prints the list of commands for --help, exit code 0', async () => {
      const out = await runCli(['--help'], env());
      expect(out.code).toBe(0);
      expect(out.stderr).toBe('');
      expect(out.stdout).toContain('Usage: npm run --silent cli -- <command>');
      for (const group of ['migrate', 'workspace', 'member', 'token', 'user', 'grant', 'demo'])
        expect(out.stdout).toMatch(new RegExp(`^  ${group} `, 'm'));
    });

    it.each(COMMANDS)('prints the usage of "%s --help" without checking its options or running it', async (name) => {
      const out = await runCli([...name.split(' '), '--help'], env());
      expect(out.code).toBe(0);
      expect(out.stdout).toContain(`Usage: npm run --silent cli -- ${name} `);
      expect(out.stdout).toContain('--json');
      expect(out.stderr).toBe('');
    });

    it('token create --help with valid options creates no token, and with --json still prints the help', async () => {
      const out = await runCli(
        ['token', 'create', '--workspace', slug, '--name', 'made-by-help', '--help', '--json'],
        env(),
      );
      expect(out.code).toBe(0);
      expect(out.stdout).toContain('--expires-in <duration>');
      expect(out.stdout).not.toContain('"token"');
      expect(await tokenNames()).not.toContain('made-by-help');
    });

    it('token create --help names the role a token made without --role gets (issue 45, item 5)', async () => {
      const help = await runCli(['token', 'create', '--help'], env());
      expect(help.stdout).toMatch(/--role <role>\s+viewer, editor, admin or owner \(default: editor\)/);
      const made = await cli('token', 'create', '--workspace', slug, '--name', 'default-role', '--json');
      expect(made.code).toBe(0);
      expect(made.json.role).toBe('editor');
    });

    it.each([
      ['an unknown command', ['frobnicate'], 'Usage: npm run --silent cli -- <command>', undefined],
      ['a group without its command', ['token'], 'Usage: npm run --silent cli -- token [options] [command]', undefined],
      [
        'an unknown option',
        ['token', 'list', '--workspace', 'acme', '--colour', 'red'],
        'Usage: npm run --silent cli -- token list ',
        '--colour',
      ],
      [
        'a missing required option',
        ['token', 'create', '--workspace', 'acme'],
        'Usage: npm run --silent cli -- token create ',
        '--name',
      ],
      [
        'an option without its value',
        ['token', 'create', '--workspace', 'acme', '--name'],
        'Usage: npm run --silent cli -- token create ',
        '--name',
      ],
      [
        'a role that does not exist',
        ['member', 'add', '--workspace', 'acme', '--email', 'ed@acme.test', '--role', 'wizard'],
        'Usage: npm run --silent cli -- member add ',
        '--role',
      ],
      [
        'a stray word',
        ['token', 'list', '--workspace', 'acme', 'extra'],
        'Usage: npm run --silent cli -- token list ',
        undefined,
      ],
    ])(
      'refuses %s with exit code 2: with --json the envelope alone on stdout and the usage on stderr',
      async (_what, argv, usage, path) => {
        const out = await runCli([...argv, '--json'], env());
        expect(out.code).toBe(2);
        expect(out.stdout.trim().split('\n')).toHaveLength(1);
        const body = JSON.parse(out.stdout);
        expect(body.error).toMatchObject({
          code: 'invalid_arguments',
          message: expect.any(String),
          hint: expect.any(String),
        });
        if (path) expect(body.error.details.map((d: { path: string }) => d.path)).toContain(path);
        expect(out.stderr).toContain(usage);

        const human = await runCli(argv, env());
        expect(human.code).toBe(2);
        expect(human.stdout).toBe('');
        expect(human.stderr).toMatch(/^error: /);
        expect(human.stderr).toContain(usage);
      },
    );

    it('names a missing option as required, not by its length limit', async () => {
      const out = await cli('token', 'create', '--workspace', slug, '--json');
      expect(out.json.error.details).toEqual([{ path: '--name', message: 'is required' }]);
    });

    it('refuses --expires-in beyond ten years as bad usage (exit 2), creating no token', async () => {
      for (const expiresIn of ['99999999999d', '3651d', '87601h', '5256001m']) {
        const out = await cli(
          'token',
          'create',
          '--workspace',
          slug,
          '--name',
          `too-long-${expiresIn}`,
          '--expires-in',
          expiresIn,
          '--json',
        );
        expect(out.code).toBe(2);
        expect(out.json.error).toMatchObject({
          code: 'invalid_arguments',
          details: [{ path: '--expires-in', message: expect.stringContaining('3650d') }],
        });
      }
      expect((await tokenNames()).filter((n: string) => n.startsWith('too-long-'))).toEqual([]);
      const longest = await cli(
        'token',
        'create',
        '--workspace',
        slug,
        '--name',
        'ten-years',
        '--expires-in',
        '3650d',
        '--json',
      );
      expect(longest.code).toBe(0);
      expect(new Date(longest.json.expiresAt).getUTCFullYear()).toBeGreaterThanOrEqual(new Date().getUTCFullYear() + 9);
    });

    it('takes a password only from standard input: --password is refused with the usage, which offers --password-stdin', async () => {
      const out = await runCli(
        ['user', 'set-password', '--email', 'boss@acme.test', '--password', 'on-the-command-line', '--json'],
        env(),
        { readStdin: async () => 'never read' },
      );
      expect(out.code).toBe(2);
      expect(out.stdout).not.toContain('on-the-command-line');
      expect(JSON.parse(out.stdout).error.details).toContainEqual({
        path: '--password',
        message: 'is not an option of this command',
      });
      expect(out.stderr).toContain('--password-stdin');
      expect(out.stderr).not.toMatch(/--password </);
    });
  });

  describe('the database it is given', () => {
    beforeAll(() => ensureBuilt());

    it('says in one line, exit code 2, that a malformed DATABASE_URL is malformed, without echoing it', async () => {
      const url = 'postgres://app:50%off@127.0.0.1:5432/formwork';
      const out = await builtCli(['token', 'list', '--workspace', 'acme'], { env: { DATABASE_URL: url } });
      expect(out.code).toBe(2);
      expect(out.stderr.split('\n')[0]).toMatch(/^error: DATABASE_URL is not a valid PostgreSQL URL/);
      expect(out.stderr).not.toMatch(/^\s+at /m); // no stack trace
      expect(out.stderr).not.toContain('50%off');

      const json = await builtCli(['migrate', '--json'], { env: { DATABASE_URL: 'not a url' } });
      expect(json.code).toBe(2);
      expect(json.stdout.trim().split('\n')).toHaveLength(1);
      expect(JSON.parse(json.stdout).error).toMatchObject({
        code: 'invalid_arguments',
        message: expect.stringContaining('DATABASE_URL'),
      });
    });

    it.each([['migrate'], ['token', 'list', '--workspace', 'acme']])(
      'reports a database that refuses connections as one service_unavailable line, exit code 1 (%s)',
      async (...argv) => {
        const out = await runCli([...argv, '--json'], {
          DATABASE_URL: 'postgres://postgres@127.0.0.1:1/formwork',
          NODE_ENV: 'test',
        });
        expect(out.code).toBe(1);
        expect(JSON.parse(out.stdout).error).toMatchObject({
          code: 'service_unavailable',
          message: expect.stringContaining('127.0.0.1:1'),
        });
        const human = await runCli(argv, {
          DATABASE_URL: 'postgres://postgres@127.0.0.1:1/formwork',
          NODE_ENV: 'test',
        });
        expect(human.stderr).toMatch(/^error: Cannot connect to the database at 127\.0\.0\.1:1: /);
      },
    );

    it('gives up on a server that accepts the connection but never answers, as one service_unavailable line', async () => {
      const sockets: Socket[] = [];
      const silent = createServer((socket) => sockets.push(socket)); // takes the TCP connection, never speaks PostgreSQL
      await new Promise<void>((done) => silent.listen(0, '127.0.0.1', done));
      const { port } = silent.address() as { port: number };
      try {
        const out = await runCli(['token', 'list', '--workspace', 'acme', '--json'], {
          DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/formwork`,
          NODE_ENV: 'test',
        });
        expect(out.code).toBe(1);
        expect(JSON.parse(out.stdout).error).toMatchObject({
          code: 'service_unavailable',
          message: expect.stringContaining(`127.0.0.1:${port}`),
        });
      } finally {
        for (const socket of sockets) socket.destroy();
        await new Promise((done) => silent.close(done));
      }
    });

    // Under data/ (git-ignored): a run killed before its cleanup leaves nothing in the repository.
    const DATA = 'data';
    const leftovers = () => {
      if (!existsSync(join(ROOT, DATA))) return;
      for (const entry of readdirSync(join(ROOT, DATA)).filter((n) => n.startsWith('cli-data-')))
        rmSync(join(ROOT, DATA, entry), { recursive: true, force: true });
    };
    afterAll(leftovers);

    it('puts a relative DATA_DIR under the project root, not the directory it is started from', async () => {
      const name = join(DATA, `cli-data-${Date.now().toString(36)}`);
      const elsewhere = mkdtempSync(join(tmpdir(), 'formwork-cwd-'));
      try {
        const out = await builtCli(['migrate', '--json'], {
          env: { DATA_DIR: name },
          cwd: elsewhere,
          timeout: 100_000,
        });
        expect(out.code).toBe(0);
        expect(JSON.parse(out.stdout).migrations.length).toBeGreaterThan(0);
        expect(existsSync(join(ROOT, name, 'pglite'))).toBe(true);
        expect(existsSync(join(elsewhere, name))).toBe(false);
      } finally {
        rmSync(join(ROOT, name), { recursive: true, force: true });
        rmSync(elsewhere, { recursive: true, force: true });
      }
    }, 120_000);
  });
});
