import { NestFastifyApplication } from '@nestjs/platform-fastify';
import request from 'supertest';
import { runCli } from '../../src/cli/cli';
import { FormsService } from '../../src/forms/forms.service';
import { WorkspacesService } from '../../src/workspaces/workspaces.service';
import { createTestApp, testDatabaseUrl } from '../utils/create-test-app';
import { callTool } from '../utils/http';

const env = () => ({ DATABASE_URL: testDatabaseUrl(), NODE_ENV: 'test' });
const cli = async (...argv: string[]) => {
  const result = await runCli(argv, env());
  return { ...result, json: result.stdout ? JSON.parse(result.stdout) : undefined };
};

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
    const ws = await cli('workspace', 'create', '--name', 'Acme', '--slug', slug, '--plan', 'pro', '--owner-email', 'Boss@Acme.test', '--json');
    expect(ws.code).toBe(0);
    expect(ws.stdout.trim().split('\n')).toHaveLength(1);
    expect(ws.json.workspace).toMatchObject({ slug, name: 'Acme', plan: 'pro' });
    expect(ws.json.owner).toMatchObject({ email: 'boss@acme.test', role: 'owner' });

    const member = await cli('member', 'add', '--workspace', slug, '--email', 'ed@acme.test', '--role', 'editor', '--json');
    expect(member.code).toBe(0);
    expect(member.json).toMatchObject({ workspace: slug, role: 'editor', user: { email: 'ed@acme.test' } });

    const created = await cli('token', 'create', '--workspace', slug, '--name', 'ci', '--role', 'viewer', '--scopes', 'forms:read,responses:read', '--expires-in', '90d', '--json');
    expect(created.code).toBe(0);
    expect(created.json).toMatchObject({ id: expect.any(String), token: expect.stringMatching(/^fw_[0-9A-Za-z]{36}$/), role: 'viewer', scopes: ['forms:read', 'responses:read'] });
    const days = (new Date(created.json.expiresAt).getTime() - Date.now()) / 86_400_000;
    expect(Math.round(days)).toBe(90);

    const me = await request(app.getHttpServer()).get('/api/v1').set('Authorization', `Bearer ${created.json.token}`);
    expect(me.body).toMatchObject({ role: 'viewer', workspace: { slug } });

    const list = await cli('token', 'list', '--workspace', slug, '--json');
    expect(list.json.tokens).toHaveLength(1);
    expect(list.json.tokens[0]).toMatchObject({ id: created.json.id, name: 'ci', prefix: created.json.token.slice(0, 7) });
    expect(list.stdout).not.toContain(created.json.token);

    const revoked = await cli('token', 'revoke', '--id', created.json.id, '--json');
    expect(revoked.code).toBe(0);
    expect(revoked.json.revokedAt).toEqual(expect.any(String));
  });

  it('refuses bad input with a JSON error and exit code 2, changing nothing', async () => {
    const bad = await cli('workspace', 'create', '--name', 'X', '--slug', 'Bad Slug!', '--plan', 'gold', '--owner-email', 'nope', '--json');
    expect(bad.code).toBe(2);
    expect(bad.json.error.code).toBe('invalid_arguments');
    expect(bad.json.error.details.map((d: { path: string }) => d.path).sort()).toEqual(['--owner-email', '--plan', '--slug']);

    const unknown = await cli('token', 'create', '--workspace', slug, '--name', 'x', '--colour', 'red', '--json');
    expect(unknown.json.error.details).toEqual([{ path: '--colour', message: 'is not an option of this command' }]);

    const taken = await cli('workspace', 'create', '--name', 'Again', '--slug', slug, '--plan', 'free', '--owner-email', 'a@b.test', '--json');
    expect(taken.json.error.code).toBe('invalid_arguments');

    const missing = await cli('token', 'list', '--workspace', 'no-such-workspace', '--json');
    expect(missing.code).toBe(1);
    expect(missing.json.error.code).toBe('not_found');

    const human = await cli('frobnicate');
    expect(human.code).toBe(2);
    expect(human.stderr).toContain('Usage:');
  });

  it('sets, shows and clears the origins allowed to embed a workspace\'s forms, which the respondent page then sends', async () => {
    const form = await app.get(FormsService).create((await app.get(WorkspacesService).requireBySlug(slug)).id, { title: 'Embed me', blocks: [{ type: 'short_text', title: 'Q' }] });
    await app.get(FormsService).setStatus(form.id, 'published');
    const frameAncestors = async () => {
      const res = await request(app.getHttpServer()).get(`/f/${form.publicId}`);
      expect(res.status).toBe(200);
      return { csp: res.headers['content-security-policy'].split('; ').find((d: string) => d.startsWith('frame-ancestors')), xfo: res.headers['x-frame-options'] };
    };
    expect(await frameAncestors()).toEqual({ csp: "frame-ancestors 'none'", xfo: 'DENY' });

    const set = await cli('workspace', 'embed-origins', '--workspace', slug, '--set', 'https://Shop.Example, https://blog.example:8443/', '--json');
    expect(set.code).toBe(0);
    expect(set.stdout.trim().split('\n')).toHaveLength(1);
    expect(set.json).toEqual({ workspace: slug, embedOrigins: ['https://shop.example', 'https://blog.example:8443'] });
    expect(await frameAncestors()).toEqual({ csp: 'frame-ancestors https://shop.example https://blog.example:8443', xfo: undefined });

    const shown = await runCli(['workspace', 'embed-origins', '--workspace', slug], env());
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain('https://shop.example https://blog.example:8443');

    const cleared = await cli('workspace', 'embed-origins', '--workspace', slug, '--clear', '--json');
    expect(cleared.json).toEqual({ workspace: slug, embedOrigins: [] });
    expect(await frameAncestors()).toEqual({ csp: "frame-ancestors 'none'", xfo: 'DENY' });
  });

  it('refuses an embed origin that is not a plain https origin with exit code 2, keeping the list as it was', async () => {
    expect((await cli('workspace', 'embed-origins', '--workspace', slug, '--set', 'https://keep.example', '--json')).code).toBe(0);
    for (const origin of ['https://a.example/path', 'http://a.example', 'https://*.example.com', "https://a.example;script-src 'unsafe-inline'"]) {
      const bad = await cli('workspace', 'embed-origins', '--workspace', slug, '--set', `https://fine.example,${origin}`, '--json');
      expect(bad.code).toBe(2);
      expect(bad.json.error).toMatchObject({ code: 'invalid_arguments', hint: expect.stringContaining('https://'), details: [{ path: '/embedOrigins/1', message: expect.any(String) }] });
    }
    const both = await cli('workspace', 'embed-origins', '--workspace', slug, '--set', 'https://a.example', '--clear', '--json');
    expect(both.code).toBe(2);
    expect(both.json.error.details).toEqual([{ path: '--set', message: 'cannot be combined with --clear' }]);
    const human = await runCli(['workspace', 'embed-origins', '--workspace', slug, '--set', 'ftp://a.example'], env());
    expect(human.code).toBe(2);
    expect(human.stderr).toContain('hint:');
    const missing = await cli('workspace', 'embed-origins', '--workspace', 'no-such-workspace', '--clear', '--json');
    expect(missing.code).toBe(1);
    expect(missing.json.error.code).toBe('not_found');

    expect((await cli('workspace', 'embed-origins', '--workspace', slug, '--json')).json.embedOrigins).toEqual(['https://keep.example']);
  });

  it('sets a password from standard input only, refusing a short one', async () => {
    const set = (password: string | undefined, ...extra: string[]) =>
      runCli(['user', 'set-password', '--email', 'boss@acme.test', ...extra, '--json'], env(), password === undefined ? {} : { readStdin: async () => `${password}\n` });
    const ok = await set('a long enough passphrase', '--password-stdin');
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ user: { email: 'boss@acme.test' }, passwordSet: true });
    expect(ok.stdout).not.toContain('passphrase');
    const short = await set('short', '--password-stdin');
    expect(short.code).toBe(2);
    expect(JSON.parse(short.stdout).error.code).toBe('invalid_arguments');
    const onArgv = await set(undefined, '--password', 'on-the-command-line');
    expect(onArgv.code).toBe(2);
    expect(JSON.parse(onArgv.stdout).error.details.map((d: { path: string }) => d.path).sort()).toEqual(['--password', '--password-stdin']);
    const unknown = await runCli(['user', 'set-password', '--email', 'nobody@acme.test', '--password-stdin', '--json'], env(), { readStdin: async () => 'a long enough passphrase' });
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
});
