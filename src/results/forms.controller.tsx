import { Controller, Get, Inject, Param, Post, Req, Res } from '@nestjs/common';
import { RouteConfig } from '@nestjs/platform-fastify';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply as Response, FastifyRequest as Request } from 'fastify';
import { Public } from '../auth/public.decorator';
import { APP_CONFIG, AppConfig } from '../config/config';
import type { FormRecord } from '../forms/forms.service';
import { Confirmations } from '../settings/confirm.controller';
import { Ctx, FORM, pageNumber, SettingsHttp, text } from '../settings/settings-http';
import { render } from '../settings/ui';
import { filterFields, statusField, underFilter } from './filter';
import { FormsPage, ResponsesPage, SharePage, SummaryPage } from './results.pages';
import { RESULTS_SCRIPT } from './results.script';
import { minRoleOf, ResultsService } from './results.service';

const FORMS_PER_PAGE = 50;

/**
 * Forms (every role from viewer up): the workspace's forms, a form's summary and how to share it,
 * the download of its responses (a signed export link, made on a post and followed at once), and
 * Publish, Close and Delete, each asked first by the settings' one confirmation step.
 */
@Public()
@ApiExcludeController()
@Controller('settings')
export class FormsResultsController {
  constructor(
    private readonly http: SettingsHttp,
    private readonly results: ResultsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    confirmations: Confirmations,
  ) {
    const transition = (to: 'published' | 'closed', key: 'publish' | 'close') =>
      confirmations.add<FormRecord>('forms', key, {
        minimum: minRoleOf(key),
        find: (ctx, id) => this.results.form(ctx.access, id),
        ask: (f) =>
          to === 'published'
            ? {
                title: f.status === 'closed' ? 'Reopen this form?' : 'Publish this form?',
                question: `"${f.title}" will take responses from anyone with its link.`,
                button: f.status === 'closed' ? 'Reopen' : 'Publish',
              }
            : {
                title: 'Close this form?',
                question: `"${f.title}" will stop taking responses. Its responses stay, and it can be reopened.`,
                button: 'Close form',
              },
        back: (f) => `/${f.publicId}`,
        act: (f, ctx) => this.results.transition(ctx.access, f.publicId, to),
        then: { notice: to === 'published' ? 'form-published' : 'form-closed' },
      });
    transition('published', 'publish');
    transition('closed', 'close');
    confirmations.add<FormRecord>('forms', 'delete', {
      minimum: minRoleOf('deleteForm'),
      find: (ctx, id) => this.results.form(ctx.access, id),
      ask: (f) => ({
        title: 'Delete this form?',
        question: `"${f.title}" and all its responses will be deleted for good.`,
        button: 'Delete form',
      }),
      back: (f) => `/${f.publicId}`,
      act: (f, ctx) => this.results.removeForm(ctx.access, f.publicId),
      then: { notice: 'form-deleted' },
    });
  }

  @Get('assets/results.js')
  script(@Res() res: Response) {
    res
      .status(200)
      .headers({
        'Content-Type': 'text/javascript; charset=utf-8',
        'Cache-Control': 'public, max-age=3600',
        'X-Content-Type-Options': 'nosniff',
      })
      .send(RESULTS_SCRIPT);
  }

  @Get('w/:slug/forms')
  list(@Req() req: Request, @Res() res: Response) {
    return this.http.run(req, res, 'viewer', async (ctx) => {
      const page = pageNumber(req.query as Record<string, unknown>);
      const { total, forms } = await this.results.listForms(ctx.access, page, FORMS_PER_PAGE);
      const html = render(
        <FormsPage
          ctx={ctx}
          forms={forms}
          total={total}
          page={page}
          perPage={FORMS_PER_PAGE}
          publicUrl={this.config.publicUrl}
        />,
      );
      this.http.send(res, 200, html);
    });
  }

  @Get('w/:slug/forms/:formId')
  summary(@Param('formId') formId: string, @Req() req: Request, @Res() res: Response) {
    return this.http.run(req, res, 'viewer', async (ctx) => {
      const form = await this.results.form(ctx.access, formId);
      const fields = filterFields(req.query as Record<string, unknown>);
      // The same filter as the Responses page (summarize_responses' `where`, since, until).
      const { found, errors } = await underFilter(form, fields, (filter) =>
        this.results.summary(ctx.access, form.publicId, filter),
      );
      const progress = await this.results.progress(ctx.access, form);
      const { status } = statusField(req.query as Record<string, unknown>);
      const page = (
        <SummaryPage
          ctx={ctx}
          form={form}
          fields={fields}
          errors={errors}
          summary={found}
          progress={progress}
          status={status}
        />
      );
      this.http.send(res, found ? 200 : 400, render(page));
    });
  }

  @Get('w/:slug/forms/:formId/share')
  share(@Param('formId') formId: string, @Req() req: Request, @Res() res: Response) {
    return this.http.run(req, res, 'viewer', async (ctx) => {
      const form = await this.results.form(ctx.access, formId);
      const query = req.query as Record<string, unknown>;
      const values = Object.fromEntries((form.hiddenFields ?? []).map((h) => [h, text(query[h]).slice(0, 500)]));
      const page = <SharePage ctx={ctx} form={form} publicUrl={this.config.publicUrl} values={values} />;
      this.http.send(res, 200, render(page));
    });
  }

  /**
   * Download: makes the export link of what the filter and status show (export_responses, acting for the
   * person) and sends the browser to it, on this origin (the link's path: the CSP's form-action
   * covers the redirect). A filter that does not fit answers the responses page with its problems (400).
   */
  @Post('w/:slug/forms/:formId/download')
  @RouteConfig(FORM)
  download(@Param('formId') formId: string, @Req() req: Request, @Res() res: Response) {
    return this.http.run(req, res, 'viewer', async (ctx: Ctx) => {
      const form = await this.results.form(ctx.access, formId);
      const fields = filterFields(ctx.body);
      const chosen = statusField(ctx.body);
      const refusedStatus = Object.keys(chosen.errors).length > 0;
      const format = text(ctx.body.format) === 'ndjson' ? 'ndjson' : 'csv';
      const read = await underFilter(form, fields, async (filter) =>
        refusedStatus ? undefined : this.results.exportLink(ctx.access, form.publicId, format, filter, chosen.status),
      );
      const found = read.found;
      if (!found) {
        const errors = { ...read.errors, ...chosen.errors };
        const page = (
          <ResponsesPage
            ctx={ctx}
            form={form}
            fields={fields}
            status={chosen.status}
            errors={errors}
            total={0}
            responses={[]}
            page={1}
          />
        );
        return this.http.send(res, 400, render(page));
      }
      const link = new URL(found.url);
      this.http.seeOther(res, `${link.pathname}${link.search}`);
    });
  }
}
