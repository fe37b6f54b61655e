import { Get, Param, Post, Query, Req, Res } from '@nestjs/common';
import { RouteConfig } from '@nestjs/platform-fastify';
import type { FastifyReply as Response, FastifyRequest as Request } from 'fastify';
import { Confirmations } from './confirm.controller';
import { SessionsService } from './sessions.service';
import { Created, ListSection } from './list-section';
import { Ctx, FORM, list, pageNumber, SettingsHttp, SettingsPages, text } from './settings-http';
import { notFound } from './settings.service';
import { FieldErrors, render } from './ui';
import { NewEndpoint, WebhooksPageService } from './webhooks-page.service';
import {
  DELIVERIES_PER_PAGE,
  DELIVERY_STATUSES,
  Endpoint,
  WebhookPage,
  WEBHOOK_SECRET,
  WebhooksPage,
} from './webhooks.pages';

type Values = Partial<NewEndpoint>;

/**
 * Webhooks (admins; the webhook tools' rules, see WebhooksPageService): endpoints, their secrets
 * shown once, each endpoint's delivery log, a test event, Redeliver; Delete and Rotate secret are
 * asked first.
 */
@SettingsPages('w/:slug/webhooks')
export class WebhooksController extends ListSection<Values> {
  constructor(
    protected readonly http: SettingsHttp,
    private readonly sessions: SessionsService,
    private readonly webhooks: WebhooksPageService,
    confirmations: Confirmations,
  ) {
    super('admin');
    const find = (ctx: Ctx, id: string) => this.webhooks.endpoint(ctx.access, id);
    confirmations.add<Endpoint>('webhooks', 'delete', {
      minimum: 'admin',
      find,
      ask: (w) => ({
        title: `Delete the endpoint ${w.url}?`,
        question: 'Nothing more is sent to it, and its delivery log goes with it. This cannot be undone.',
        button: 'Delete',
      }),
      act: (w, ctx) => this.webhooks.remove(ctx.access, w.id),
      then: { notice: 'webhook-deleted' },
    });
    confirmations.add<Endpoint>('webhooks', 'rotate', {
      minimum: 'admin',
      find,
      ask: (w) => ({
        title: `Rotate the secret of ${w.url}?`,
        question:
          'A new signing secret is made and shown once. The old one keeps signing beside it for 24 hours, so your receiver can switch in that time; rotating again ends that overlap.',
        button: 'Rotate secret',
      }),
      back: (w) => `/${encodeURIComponent(w.id)}`,
      // A second post of the rotation (a double click) would end the old secret's overlap at once.
      once: true,
      act: async (w, ctx) => {
        const { url, secret, previousSecretExpiresAt } = await this.webhooks.rotate(ctx.access, w.id);
        await this.sessions.flash(ctx.session, 'webhook', { url, secret, previousSecretExpiresAt });
      },
      then: { to: '/secret' },
    });
  }

  protected async page(ctx: Ctx, errors: FieldErrors, values: Values) {
    const list = await this.webhooks.list(ctx.access);
    return <WebhooksPage ctx={ctx} list={list} nonce={this.sessions.nonce()} errors={errors} values={values} />;
  }

  protected async create({ access, body, session, base }: Ctx): Promise<Created<Values>> {
    const values = { url: text(body.url), events: list(body.events), description: text(body.description) };
    // A form sent twice (a reload of the POST, a double click) finds its nonce used: nothing is created.
    if (!(await this.sessions.useNonce(body.nonce))) return { to: `${base}/webhooks` };
    const { errors, created } = await this.webhooks.create(access, values);
    if (!created) return { errors, values };
    await this.sessions.flash(session, 'webhook', { url: created.url, secret: created.secret });
    return { to: `${base}/webhooks/secret` };
  }

  @Get('secret')
  secret(@Req() req: Request, @Res() res: Response) {
    return this.http.showFlash(req, res, 'webhook', WEBHOOK_SECRET);
  }

  /** An endpoint and its delivery log (?status=, ?page=). */
  @Get(':id')
  webhook(@Param('id') id: string, @Query() query: Record<string, unknown>, @Req() req: Request, @Res() res: Response) {
    return this.http.run(req, res, 'admin', async (ctx) => {
      const w = await this.webhooks.endpoint(ctx.access, id);
      const page = pageNumber(query);
      const known = (DELIVERY_STATUSES as readonly string[]).includes(text(query.status));
      const status = known ? text(query.status) : undefined;
      const offset = (page - 1) * DELIVERIES_PER_PAGE;
      const log = await this.webhooks.deliveries(ctx.access, id, { status, limit: DELIVERIES_PER_PAGE, offset });
      this.http.send(res, 200, render(<WebhookPage ctx={ctx} w={w} log={log} view={{ status, page }} />));
    });
  }

  @Post(':id/enabled')
  @RouteConfig(FORM)
  enable(@Param('id') id: string, @Req() req: Request, @Res() res: Response) {
    return this.http.run(req, res, 'admin', async ({ access, body, base }) => {
      const enabled = text(body.enabled);
      if (enabled !== 'true' && enabled !== 'false') throw notFound();
      await this.webhooks.setEnabled(access, id, enabled === 'true');
      this.http.seeOther(res, `${base}/webhooks`, enabled === 'true' ? 'webhook-enabled' : 'webhook-disabled');
    });
  }

  @Post(':id/test')
  @RouteConfig(FORM)
  sendTest(@Param('id') id: string, @Req() req: Request, @Res() res: Response) {
    return this.http.run(req, res, 'admin', async ({ access, body, base }) => {
      await this.webhooks.sendTest(access, id, text(body.event));
      this.http.seeOther(res, `${base}/webhooks/${encodeURIComponent(id)}`, 'test-sent');
    });
  }

  /** Redelivers, then shows the log of the delivery's endpoint. */
  @Post('deliveries/:deliveryId/redeliver')
  @RouteConfig(FORM)
  redeliver(@Param('deliveryId') deliveryId: string, @Req() req: Request, @Res() res: Response) {
    return this.http.run(req, res, 'admin', async ({ access, base }) => {
      const delivery = await this.webhooks.redeliver(access, deliveryId);
      this.http.seeOther(res, `${base}/webhooks/${delivery.webhookId}`, 'redelivered');
    });
  }
}
