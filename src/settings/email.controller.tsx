import { Get, Param, Post, Query, Req, Res } from '@nestjs/common';
import { RouteConfig } from '@nestjs/platform-fastify';
import type { FastifyReply as Response, FastifyRequest as Request } from 'fastify';
import { roleAtLeast } from '../common/access/roles';
import { EmailService } from '../email/email.service';
import { NOTIFY_MODES, NotifyMode, OUTBOX_STATUSES, OutboxRow } from '../email/email.repository';
import { Ctx, FORM, pageNumber, SettingsHttp, SettingsPages, text } from './settings-http';
import { notFound } from './settings.service';
import { Field, Layout, Pager, PostForm, render, Select, StatusFilter, Table, when } from './ui';

const PER_PAGE = 50;
const MODE_LABELS: Record<NotifyMode, string> = {
  off: 'Off',
  each: 'Each response',
  hourly: 'Hourly digest',
  daily: 'Daily digest',
};

interface View {
  forms: Array<{ publicId: string; title: string; mode: NotifyMode }>;
  /** Admins see the workspace's outbox. */
  outbox?: { rows: OutboxRow[]; status?: string; page: number };
  configured: boolean;
  from: string;
}

function EmailPage({ ctx, v }: { ctx: Ctx; v: View }) {
  const here = `${ctx.base}/email`;
  return (
    <Layout title="Email" chrome={ctx.chrome}>
      <h1>Email</h1>
      {v.configured ? (
        <p>
          Messages are sent from <code>{v.from}</code>.
        </p>
      ) : (
        <p role="status">
          No mail server is configured: messages wait in the outbox below, and go out once one is. Set{' '}
          <code>SMTP_URL</code> (<code>smtp://user:password@mail.example.com:587</code>, STARTTLS, or{' '}
          <code>smtps://…:465</code>) and <code>MAIL_FROM</code> and restart; see docs/email.md.
        </p>
      )}
      <h2>Your notifications</h2>
      <p className="desc">For each form, email yourself each response, or an hourly or daily digest.</p>
      {v.forms.length ? (
        <Table label="Notifications" head={['Form', 'Notify me']}>
          {v.forms.map((f) => (
            <tr key={f.publicId}>
              <td>{f.title}</td>
              <td>
                <PostForm
                  action={`${here}/notify`}
                  csrf={ctx.chrome.csrf}
                  className="actions"
                  hidden={{ form: f.publicId }}
                >
                  <Field
                    id={`mode-${f.publicId}`}
                    label={`Notify me of ${f.title}`}
                    errors={{}}
                    control={(a) => (
                      <Select {...a} name="mode" options={NOTIFY_MODES} chosen={f.mode} labels={MODE_LABELS} />
                    )}
                  />
                  <button type="submit">Save</button>
                </PostForm>
              </td>
            </tr>
          ))}
        </Table>
      ) : (
        <p>No forms yet.</p>
      )}
      {v.outbox ? <Outbox ctx={ctx} o={v.outbox} /> : null}
    </Layout>
  );
}

function Outbox({ ctx, o }: { ctx: Ctx; o: NonNullable<View['outbox']> }) {
  const here = `${ctx.base}/email`;
  return (
    <>
      <h2>Messages</h2>
      <PostForm action={`${here}/test`} csrf={ctx.chrome.csrf} className="actions">
        <button type="submit" className="secondary">
          Send a test message to {ctx.chrome.email}
        </button>
      </PostForm>
      <StatusFilter action={here} statuses={OUTBOX_STATUSES} chosen={o.status} />
      {o.rows.length ? (
        <Table label="Messages" head={['Kind', 'To', 'Created', 'Status', 'Attempts', 'Last answer', '']}>
          {o.rows.map((r) => (
            <tr key={r.id}>
              <td>{r.kind}</td>
              <td>{r.toAddress}</td>
              <td>{when(r.createdAt)}</td>
              <td>
                {r.status}
                {r.status === 'pending' && r.attemptCount > 0 ? `, next try ${when(r.nextAttemptAt)}` : ''}
              </td>
              <td>{r.attemptCount}</td>
              <td>{r.lastAnswer ? `${r.lastAnswer} (${when(r.lastAttemptAt)})` : '—'}</td>
              <td>
                {r.status === 'failed' ? (
                  <PostForm action={`${here}/${r.id}/retry`} csrf={ctx.chrome.csrf} className="inline">
                    <button type="submit" className="secondary">
                      Send again
                    </button>
                  </PostForm>
                ) : null}
              </td>
            </tr>
          ))}
        </Table>
      ) : (
        <p>No messages in the last 30 days.</p>
      )}
      <Pager query={o.status ? { status: o.status } : {}} page={o.page} more={o.rows.length === PER_PAGE} />
    </>
  );
}

/**
 * Email (every member): the signed-in person's notifications per form; for admins, the workspace's
 * outbox (each message's state and the server's last answer) and a test message.
 */
@SettingsPages('w/:slug/email')
export class EmailController {
  constructor(
    private readonly http: SettingsHttp,
    private readonly email: EmailService,
  ) {}

  @Get()
  page(@Query() query: Record<string, unknown>, @Req() req: Request, @Res() res: Response) {
    return this.http.run(req, res, 'viewer', async (ctx) => {
      const ws = ctx.access.workspace.id;
      const forms = await this.email.forms(ws, ctx.session.userId);
      let outbox: View['outbox'];
      if (roleAtLeast(ctx.access.role, 'admin')) {
        const page = pageNumber(query);
        const status = (OUTBOX_STATUSES as readonly string[]).includes(text(query.status))
          ? text(query.status)
          : undefined;
        const rows = await this.email.outbox(ws, { status, limit: PER_PAGE, offset: (page - 1) * PER_PAGE });
        outbox = { rows, status, page };
      }
      const v: View = { forms, outbox, configured: this.email.configured, from: this.email.from };
      this.http.send(res, 200, render(<EmailPage ctx={ctx} v={v} />));
    });
  }

  @Post('notify')
  @RouteConfig(FORM)
  notify(@Req() req: Request, @Res() res: Response) {
    return this.http.run(req, res, 'viewer', async ({ access, body, session, base }) => {
      const mode = text(body.mode) as NotifyMode;
      if (!NOTIFY_MODES.includes(mode)) throw notFound();
      if (!(await this.email.setMode(access.workspace.id, session.userId, text(body.form), mode))) throw notFound();
      this.http.seeOther(res, `${base}/email`, 'email-saved');
    });
  }

  /** A failed message, due again (after the address or the server is fixed). */
  @Post(':id/retry')
  @RouteConfig(FORM)
  retry(@Param('id') id: string, @Req() req: Request, @Res() res: Response) {
    return this.http.run(req, res, 'admin', async ({ access, base }) => {
      if (!(await this.email.retry(access.workspace.id, id))) throw notFound();
      this.http.seeOther(res, `${base}/email`, 'email-retry');
    });
  }

  @Post('test')
  @RouteConfig(FORM)
  test(@Req() req: Request, @Res() res: Response) {
    return this.http.run(req, res, 'admin', async ({ access, session, base }) => {
      await this.email.queueTest(access.workspace.id, session.email);
      this.http.seeOther(res, `${base}/email`, 'email-test');
    });
  }
}
