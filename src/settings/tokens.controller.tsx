import { Controller, Get, Post, Req, Res } from '@nestjs/common';
import { RouteConfig } from '@nestjs/platform-fastify';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply as Response, FastifyRequest as Request } from 'fastify';
import { Public } from '../auth/public.decorator';
import { isRole, isScope, Role, SCOPES } from '../common/access/roles';
import { Confirmations } from './confirm.controller';
import { SessionsService } from './sessions.service';
import { badText, Ctx, FORM, list, SettingsHttp, text } from './settings-http';
import { SettingsService } from './settings.service';
import {
  Checkboxes,
  Field,
  FieldErrors,
  Hidden,
  Layout,
  OnceShown,
  PostForm,
  render,
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

/** API tokens (admins): the list, a new token (its secret shown once), Revoke (asked first). */
@Public()
@ApiExcludeController()
@Controller('settings/w/:slug/tokens')
export class TokensController {
  constructor(
    private readonly http: SettingsHttp,
    private readonly sessions: SessionsService,
    private readonly settings: SettingsService,
    confirmations: Confirmations,
  ) {
    confirmations.add('tokens', 'revoke', {
      minimum: 'admin',
      find: (ctx, id) => this.settings.findToken(ctx.access, id),
      ask: (token) => ({
        title: `Revoke ${token.name}?`,
        question: `Scripts using the token ${token.token_prefix}… stop working within 5 seconds. This cannot be undone.`,
        button: 'Revoke',
        back: '',
      }),
      act: async (token, ctx) => {
        await this.settings.revokeToken(ctx.access, token.id);
        return { to: '', notice: 'token-revoked' };
      },
    });
  }

  @Get()
  tokens(@Req() req: Request, @Res() res: Response) {
    return this.http.run(req, res, 'admin', (ctx) => this.show(ctx, res, 200, {}, {}));
  }

  @Post()
  @RouteConfig(FORM)
  create(@Req() req: Request, @Res() res: Response) {
    return this.http.run(req, res, 'admin', async (ctx) => {
      const { body, access: a } = ctx;
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
        return this.show(
          ctx,
          res,
          403,
          { role: `A token cannot have a stronger role than yours (${a.role}).` },
          values,
        );
      if (!values.scopes.length || !values.scopes.every(isScope)) errors.scopes = 'Choose at least one scope.';
      const days = values.expiry === 'never' ? undefined : Number(values.expiry);
      if (days !== undefined && ![30, 90, 365].includes(days)) errors.expiry = 'Choose when the token expires.';
      if (Object.keys(errors).length) return this.show(ctx, res, 400, errors, values);
      // A form sent twice (a reload of the POST, a double click) finds its nonce used: nothing is created.
      if (!(await this.sessions.useNonce(body.nonce))) return this.http.seeOther(res, `${ctx.base}/tokens`);
      const { token } = await this.settings.createToken(a, {
        name: values.name,
        role: values.role as Role,
        scopes: values.scopes,
        expiresAt: days ? new Date(Date.now() + days * 86_400_000) : undefined,
      });
      await this.sessions.flash(ctx.session, 'token', { name: values.name, token });
      this.http.seeOther(res, `${ctx.base}/tokens/created`);
    });
  }

  @Get('created')
  created(@Req() req: Request, @Res() res: Response) {
    return this.http.run(req, res, 'admin', async (ctx) => {
      const flash = await this.sessions.takeFlash(ctx.session, 'token');
      const page = (
        <OnceShown
          chrome={{ ...ctx.chrome, current: 'tokens' }}
          title="Token created"
          shown={!!flash}
          intro={
            <>
              Copy the secret of <strong>{String(flash?.name ?? '')}</strong> now: it is shown only this once, and
              Formwork keeps only a hash of it.
            </>
          }
          secret={flash?.token}
          goneTitle="Secret no longer shown"
          gone="A token's secret is shown only once, right after it is created. If it was lost, revoke the token and create a new one."
          back={{ href: `${ctx.base}/tokens`, label: 'Back to API tokens' }}
        />
      );
      this.http.send(res, 200, render(page));
    });
  }

  private async show(ctx: Ctx, res: Response, status: number, errors: FieldErrors, values: Values) {
    const tokens = await this.settings.listTokens(ctx.access);
    const page = (
      <TokensPage
        ctx={ctx}
        tokens={tokens}
        nonce={this.sessions.nonce()}
        roles={this.settings.grantable(ctx.access)}
        errors={errors}
        values={values}
      />
    );
    this.http.send(res, status, render(page));
  }
}
