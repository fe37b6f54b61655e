import { Get, Req, Res } from '@nestjs/common';
import type { FastifyReply as Response, FastifyRequest as Request } from 'fastify';
import { isRole, isScope, Role, SCOPES } from '../common/access/roles';
import { Confirmations } from './confirm.controller';
import { SessionsService } from './sessions.service';
import { Created, ListSection } from './list-section';
import { badText, Ctx, list, SettingsHttp, SettingsPages, text } from './settings-http';
import { SettingsService } from './settings.service';
import {
  Checkboxes,
  Field,
  FieldErrors,
  Hidden,
  Layout,
  OnceShownText,
  PostForm,
  Select,
  Summary,
  Table,
  when,
} from './ui';

export const ROLE_WORDS: Record<Role, string> = {
  viewer: 'viewer (read)',
  editor: 'editor (read and write)',
  admin: 'admin (+ delete forms)',
  owner: 'owner (everything)',
};
const EXPIRY = ['30', '90', '365', 'never'];
const EXPIRY_WORDS: Record<string, string> = { '30': '30 days', '90': '90 days', '365': '1 year', never: 'Never' };

type Token = Awaited<ReturnType<SettingsService['listTokens']>>[number];
type Values = { name?: string; role?: string; scopes?: string[]; expiry?: string };

function TokensPage(props: {
  ctx: Ctx;
  tokens: Token[];
  nonce: string;
  roles: Role[];
  errors: FieldErrors;
  values: Values;
}) {
  const { ctx, errors, values } = props;
  const base = `${ctx.base}/tokens`;
  return (
    <Layout title="API tokens" chrome={{ ...ctx.chrome, current: 'tokens' }}>
      <h1>API tokens</h1>
      <p className="desc">
        Scripts and automations call the tools API with these. A token acts with its role, never more than its
        creator&apos;s current role.
      </p>
      <Summary errors={errors} />
      {props.tokens.length ? (
        <Table
          label="API tokens"
          head={['Name', 'Prefix', 'Role', 'Scopes', 'Creator', 'Created', 'Last used', 'Expires', '']}
        >
          {props.tokens.map((t) => (
            <tr key={t.id}>
              <td>{t.name}</td>
              <td>
                <code className="prefix">{t.token_prefix}…</code>
              </td>
              <td>{t.role}</td>
              <td>{(t.scopes ?? SCOPES).join(', ')}</td>
              <td>{t.creator ?? 'CLI'}</td>
              <td>{when(t.created_at)}</td>
              <td>{when(t.last_used_at)}</td>
              <td>{t.expires_at ? when(t.expires_at) : 'never'}</td>
              <td>
                <a href={`${base}/${t.id}/revoke`}>
                  Revoke<Hidden> {t.name}</Hidden>
                </a>
              </td>
            </tr>
          ))}
        </Table>
      ) : (
        <p>No tokens yet.</p>
      )}
      <h2>New token</h2>
      <PostForm action={base} csrf={ctx.chrome.csrf} hidden={{ nonce: props.nonce }}>
        <Field
          id="name"
          label="Name"
          errors={errors}
          hint='What uses it, e.g. "Nightly export".'
          control={(a) => <input type="text" {...a} defaultValue={values.name ?? ''} maxLength={100} required />}
        />
        <Field
          id="role"
          label="Role"
          errors={errors}
          control={(a) => <Select {...a} options={props.roles} chosen={values.role ?? 'viewer'} labels={ROLE_WORDS} />}
        />
        <Checkboxes
          id="scopes"
          legend="Scopes"
          options={SCOPES}
          chosen={values.scopes ?? ['forms:read']}
          errors={errors}
        />
        <Field
          id="expiry"
          label="Expires after"
          errors={errors}
          control={(a) => <Select {...a} options={EXPIRY} chosen={values.expiry ?? '90'} labels={EXPIRY_WORDS} />}
        />
        <button type="submit">Create token</button>
      </PostForm>
    </Layout>
  );
}

/** A new token's secret, shown once. */
const TOKEN_CREATED: OnceShownText = {
  section: 'tokens',
  title: () => 'Token created',
  intro: (f) => (
    <>
      Copy the secret of <strong>{String(f.name)}</strong> now: it is shown only this once, and Formwork keeps only a
      hash of it.
    </>
  ),
  secret: 'token',
  gone: [
    'Secret no longer shown',
    "A token's secret is shown only once, right after it is created. If it was lost, revoke the token and create a new one.",
  ],
  back: 'Back to API tokens',
};

/** API tokens (admins): the list, a new token (its secret shown once), Revoke (asked first). */
@SettingsPages('w/:slug/tokens')
export class TokensController extends ListSection<Values> {
  constructor(
    protected readonly http: SettingsHttp,
    private readonly sessions: SessionsService,
    private readonly settings: SettingsService,
    confirmations: Confirmations,
  ) {
    super('admin');
    confirmations.add('tokens', 'revoke', {
      minimum: 'admin',
      find: (ctx, id) => this.settings.findToken(ctx.access, id),
      ask: (token) => ({
        title: `Revoke ${token.name}?`,
        question: `Scripts using the token ${token.token_prefix}… stop working within 5 seconds. This cannot be undone.`,
        button: 'Revoke',
      }),
      act: (token, ctx) => this.settings.revokeToken(ctx.access, token.id),
      then: { notice: 'token-revoked' },
    });
  }

  protected async page(ctx: Ctx, errors: FieldErrors, values: Values) {
    const tokens = await this.settings.listTokens(ctx.access);
    const roles = this.settings.grantable(ctx.access);
    const nonce = this.sessions.nonce();
    return <TokensPage ctx={ctx} tokens={tokens} nonce={nonce} roles={roles} errors={errors} values={values} />;
  }

  protected async create({ access: a, body, session, base }: Ctx): Promise<Created<Values>> {
    const values = {
      name: text(body.name),
      role: text(body.role),
      scopes: list(body.scopes),
      expiry: text(body.expiry),
    };
    const errors: FieldErrors = {};
    if (!values.name || badText(values.name, 100)) errors.name = 'Give the token a name (up to 100 characters).';
    if (!isRole(values.role)) errors.role = 'Choose a role.';
    else if (!this.settings.grantable(a).includes(values.role))
      return { status: 403, errors: { role: `A token cannot have a stronger role than yours (${a.role}).` }, values };
    if (!values.scopes.length || !values.scopes.every(isScope)) errors.scopes = 'Choose at least one scope.';
    const days = values.expiry === 'never' ? undefined : Number(values.expiry);
    if (days !== undefined && ![30, 90, 365].includes(days)) errors.expiry = 'Choose when the token expires.';
    if (Object.keys(errors).length) return { errors, values };
    // A form sent twice (a reload of the POST, a double click) finds its nonce used: nothing is created.
    if (!(await this.sessions.useNonce(body.nonce))) return { to: `${base}/tokens` };
    const { token } = await this.settings.createToken(a, {
      name: values.name,
      role: values.role as Role,
      scopes: values.scopes,
      expiresAt: days ? new Date(Date.now() + days * 86_400_000) : undefined,
    });
    await this.sessions.flash(session, 'token', { name: values.name, token });
    return { to: `${base}/tokens/created` };
  }

  @Get('created')
  created(@Req() req: Request, @Res() res: Response) {
    return this.http.showFlash(req, res, 'token', TOKEN_CREATED);
  }
}
