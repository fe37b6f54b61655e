import { Get, Post, Req, Res } from '@nestjs/common';
import { RouteConfig } from '@nestjs/platform-fastify';
import type { FastifyReply as Response, FastifyRequest as Request } from 'fastify';
import { PLANS, Plan } from '../common/access/roles';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { ApiError } from '../common/errors/api-error';
import { currentManager } from '../database/transaction';
import { FILE_SIZE_LIMIT_MB } from '../forms/blocks';
import { sizeText } from '../results/results.pages';
import { UploadsService } from '../uploads/uploads.service';
import { Ctx, FORM, SettingsHttp, SettingsPages, text } from './settings-http';
import { notFound, SettingsService } from './settings.service';
import { Field, FieldErrors, Layout, PostForm, render, Summary } from './ui';

function PlanPage({
  ctx,
  errors,
  origins,
  storedBytes,
}: {
  ctx: Ctx;
  errors: FieldErrors;
  origins?: string;
  storedBytes: number;
}) {
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
      <p>
        Files take up to {FILE_SIZE_LIMIT_MB[w.plan]} MB each on this plan (Free {FILE_SIZE_LIMIT_MB.free} MB, Pro{' '}
        {FILE_SIZE_LIMIT_MB.pro} MB). Storage used by the files of this workspace&apos;s responses:{' '}
        <strong>{sizeText(storedBytes)}</strong>.
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
    private readonly uploads: UploadsService,
    @InjectDataSource() private readonly db: DataSource,
  ) {}

  private storedBytes(ctx: Ctx): Promise<number> {
    return this.uploads.storedBytes(currentManager(this.db), ctx.access.workspace.id);
  }

  @Get('plan')
  plan(@Req() req: Request, @Res() res: Response) {
    return this.http.run(req, res, 'owner', async (ctx) => {
      const storedBytes = await this.storedBytes(ctx);
      this.http.send(res, 200, render(<PlanPage ctx={ctx} errors={{}} storedBytes={storedBytes} />));
    });
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
        const storedBytes = await this.storedBytes(ctx);
        const page = <PlanPage ctx={ctx} errors={{ origins: err.message }} origins={raw} storedBytes={storedBytes} />;
        return this.http.send(res, 400, render(page));
      }
      this.http.seeOther(res, `${ctx.base}/plan`, 'origins-saved');
    });
  }
}
