import { Get, Param, Post, Req, Res } from '@nestjs/common';
import { RouteConfig } from '@nestjs/platform-fastify';
import type { FastifyReply as Response, FastifyRequest as Request } from 'fastify';
import { isRole, Role } from '../common/access/roles';
import { Confirmations } from './confirm.controller';
import { SessionsService } from './sessions.service';
import { Created, ListSection } from './list-section';
import { badText, Ctx, FORM, SettingsHttp, SettingsPages, text } from './settings-http';
import { MemberView, notFound, SettingsService } from './settings.service';
import { ROLE_WORDS } from './tokens.controller';
import { Field, FieldErrors, Layout, Notice, OnceShownText, PostForm, Select, Summary, Table, when } from './ui';

type Values = { email?: string; role?: string };

function MemberRow({ ctx, m, roles }: { ctx: Ctx; m: MemberView; roles: Role[] }) {
  const a = ctx.access;
  const here = `${ctx.base}/members/${m.userId}`;
  const password = m.passwordElsewhere
    ? "through another workspace's link: not usable here"
    : m.hasPassword
      ? 'yes'
      : 'not yet';
  return (
    <tr>
      <td>
        {m.email}
        {m.userId === a.session.userId ? <span className="desc"> (you)</span> : null}
      </td>
      <td>{m.role}</td>
      <td>{password}</td>
      <td>{when(m.joinedAt)}</td>
      <td>
        {m.role !== 'owner' || a.role === 'owner' ? (
          <div className="row-actions">
            <PostForm action={`${here}/role`} csrf={ctx.chrome.csrf} className="inline">
              <label htmlFor={`role-${m.userId}`} className="visually-hidden">
                Role of {m.email}
              </label>
              <Select id={`role-${m.userId}`} name="role" options={roles} chosen={m.role} />{' '}
              <button type="submit" className="secondary">
                Change role
              </button>
            </PostForm>
            {m.linkAllowed ? (
              <PostForm action={`${here}/link`} csrf={ctx.chrome.csrf} className="inline">
                <button type="submit" className="secondary">
                  New password link
                </button>
              </PostForm>
            ) : null}
            <a href={`${here}/remove`}>Remove</a>
          </div>
        ) : (
          <span className="desc">only an owner can change an owner</span>
        )}
      </td>
    </tr>
  );
}

function MembersPage(props: {
  ctx: Ctx;
  members: MemberView[];
  roles: Role[];
  errors: FieldErrors;
  values: Values;
  notice?: string;
}) {
  const { ctx, errors } = props;
  return (
    <Layout title="Members" chrome={{ ...ctx.chrome, current: 'members' }}>
      <h1>Members</h1>
      <Notice text={props.notice} />
      <Summary errors={errors} />
      <Table label="Members" head={['Email', 'Role', 'Password set', 'Joined', '']}>
        {props.members.map((m) => (
          <MemberRow key={m.userId} ctx={ctx} m={m} roles={props.roles} />
        ))}
      </Table>
      <h2>Add a member</h2>
      <PostForm action={`${ctx.base}/members`} csrf={ctx.chrome.csrf}>
        <Field
          id="email"
          label="Email"
          errors={errors}
          control={(x) => (
            <input type="email" {...x} defaultValue={props.values.email ?? ''} maxLength={320} required />
          )}
        />
        <Field
          id="role"
          label="Role"
          errors={errors}
          control={(x) => (
            <Select {...x} options={props.roles} chosen={props.values.role ?? 'editor'} labels={ROLE_WORDS} />
          )}
        />
        <button type="submit">Add member</button>
      </PostForm>
    </Layout>
  );
}

/** A set-password link, shown once. */
const LINK_SHOWN: OnceShownText = {
  section: 'members',
  title: () => 'Set-password link',
  intro: (f) => (
    <>
      Formwork sends no email: give this link to <strong>{String(f.email)}</strong>. It works once, within 24 hours, and
      is shown only now.
    </>
  ),
  secret: 'url',
  gone: [
    'Link no longer shown',
    'A set-password link is shown only once. Make a new one from the members list if it was lost.',
  ],
  back: 'Back to members',
};

/** Members (admins): the list, roles, set-password links (shown once), add, Remove (asked first). */
@SettingsPages('w/:slug/members')
export class MembersController extends ListSection<Values> {
  constructor(
    protected readonly http: SettingsHttp,
    private readonly sessions: SessionsService,
    private readonly settings: SettingsService,
    confirmations: Confirmations,
  ) {
    super('admin');
    confirmations.add('members', 'remove', {
      minimum: 'admin',
      find: (ctx, userId) => this.settings.findMember(ctx.access, userId),
      ask: (m, ctx) => ({
        title: `Remove ${m.email}?`,
        question: `${m.email} loses access to ${ctx.access.workspace.name}, and the tokens they created stop working within 5 seconds.`,
        button: 'Remove',
      }),
      act: (m, ctx) => this.settings.removeMember(ctx.access, m.userId),
      then: { notice: 'member-removed' },
    });
  }

  protected async page(ctx: Ctx, errors: FieldErrors, values: Values, notice?: string) {
    const members = await this.settings.listMembers(ctx.access);
    const roles = this.settings.grantable(ctx.access);
    return <MembersPage ctx={ctx} members={members} roles={roles} errors={errors} values={values} notice={notice} />;
  }

  protected async create({ access, body, session, base }: Ctx): Promise<Created<Values>> {
    const values = { email: text(body.email), role: text(body.role) };
    const errors: FieldErrors = {};
    if (!/^[^\s@]+@[^\s@]+$/.test(values.email) || badText(values.email, 320))
      errors.email = 'Enter an email address, e.g. ada@example.com.';
    if (!isRole(values.role)) errors.role = 'Choose a role.';
    if (Object.keys(errors).length) return { errors, values };
    const added = await this.settings.addMember(access, values.email, values.role as Role);
    if (added.outcome === 'already_member')
      return { errors: { email: 'This person is already a member: change their role in the list.' }, values };
    if (added.outcome === 'refused') return { status: 403, errors: { email: added.reason }, values };
    if (!added.link)
      return {
        status: 200,
        errors: {},
        values: {},
        notice:
          added.noLink === 'has_password'
            ? `${added.email} was added. They already have a password and can sign in.`
            : `${added.email} was added. They have no password yet and also belong to another workspace, so no set-password link is shown here (whoever sets it could act as them there): an operator sets their first password with \`user set-password\` (the command line).`,
      };
    await this.sessions.flash(session, 'link', { email: added.email, url: this.http.linkUrl(added.link) });
    return { to: `${base}/members/link` };
  }

  @Get('link')
  link(@Req() req: Request, @Res() res: Response) {
    return this.http.showFlash(req, res, 'link', LINK_SHOWN);
  }

  @Post(':userId/role')
  @RouteConfig(FORM)
  changeRole(@Param('userId') userId: string, @Req() req: Request, @Res() res: Response) {
    return this.http.run(req, res, 'admin', async ({ access, body, base }) => {
      const role = text(body.role);
      if (!isRole(role)) throw notFound();
      await this.settings.changeRole(access, userId, role);
      this.http.seeOther(res, `${base}/members`, 'role-changed');
    });
  }

  @Post(':userId/link')
  @RouteConfig(FORM)
  newLink(@Param('userId') userId: string, @Req() req: Request, @Res() res: Response) {
    return this.http.run(req, res, 'admin', async ({ access, session, base }) => {
      const { email, link } = await this.settings.newLink(access, userId);
      await this.sessions.flash(session, 'link', { email, url: this.http.linkUrl(link) });
      this.http.seeOther(res, `${base}/members/link`);
    });
  }
}
