import { Get, Post, Req, Res } from '@nestjs/common';
import { RouteConfig } from '@nestjs/platform-fastify';
import type { FastifyReply as Response, FastifyRequest as Request } from 'fastify';
import { PLANS, Plan } from '../common/access/roles';
import { ApiError } from '../common/errors/api-error';
import { Ctx, FORM, SettingsHttp, SettingsPages, text } from './settings-http';
import { notFound, SettingsService } from './settings.service';
import { Field, FieldErrors, Layout, PostForm, render, Summary } from './ui';

function PlanPage({ ctx, errors, origins }: { ctx: Ctx; errors: FieldErrors; origins?: string }) {
  const w = ctx.access.workspace;
  const pro = w.plan === 'pro';
  return (
    <Layout title="Plan and embedding" chrome={{ ...ctx.chrome, current: 'plan' }}>
      <h1>Plan and embedding</h1>
      <Summary errors={errors} />
      <h2>Plan</h2>
      <p>
        This workspace is on <strong>{pro ? 'Pro' : 'Free'}</strong>.{' '}
        {pro ? 'Write tools are available.' : 'Write tools need Pro.'} There is no billing: switching is recorded in the
        audit log.
      </p>
      <PostForm action={`${ctx.base}/plan`} csrf={ctx.chrome.csrf} hidden={{ plan: pro ? 'free' : 'pro' }}>
        <button type="submit">Switch to {pro ? 'Free' : 'Pro'}</button>
      </PostForm>
      <h2>Embedding</h2>
      <PostForm action={`${ctx.base}/embed-origins`} csrf={ctx.chrome.csrf}>
        <Field
          id="origins"
          label="Sites allowed to embed the forms"
          errors={errors}
          hint="One origin per line, e.g. https://www.example.com. Empty: no site may frame the forms."
          control={(x) => <textarea {...x} rows={4} defaultValue={origins ?? w.embedOrigins.join('\n')} />}
        />
        <button type="submit">Save origins</button>
      </PostForm>
    </Layout>
  );
}

/** The plan and the sites allowed to embed the forms (owners). */
@SettingsPages('w/:slug')
export class PlanController {
  constructor(
    private readonly http: SettingsHttp,
    private readonly settings: SettingsService,
  ) {}

  @Get('plan')
  plan(@Req() req: Request, @Res() res: Response) {
    return this.http.run(req, res, 'owner', (ctx) =>
      this.http.send(res, 200, render(<PlanPage ctx={ctx} errors={{}} />)),
    );
  }

  @Post('plan')
  @RouteConfig(FORM)
  setPlan(@Req() req: Request, @Res() res: Response) {
    return this.http.run(req, res, 'owner', async ({ access, body, base }) => {
      const plan = text(body.plan);
      if (!(PLANS as readonly string[]).includes(plan)) throw notFound();
      await this.settings.setPlan(access, plan as Plan);
      this.http.seeOther(res, `${base}/plan`, 'plan-changed');
    });
  }

  @Post('embed-origins')
  @RouteConfig(FORM)
  setOrigins(@Req() req: Request, @Res() res: Response) {
    return this.http.run(req, res, 'owner', async (ctx) => {
      const raw = text(ctx.body.origins).slice(0, 5000);
      try {
        await this.settings.setEmbedOrigins(ctx.access, raw.split(/\s+/).filter(Boolean));
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        const page = <PlanPage ctx={ctx} errors={{ origins: err.message }} origins={raw} />;
        return this.http.send(res, 400, render(page));
      }
      this.http.seeOther(res, `${ctx.base}/plan`, 'origins-saved');
    });
  }
}
