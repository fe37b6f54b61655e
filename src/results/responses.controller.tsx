import { Controller, Get, Param, Post, Req, Res } from '@nestjs/common';
import { RouteConfig } from '@nestjs/platform-fastify';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply as Response, FastifyRequest as Request } from 'fastify';
import { Public } from '../auth/public.decorator';
import { Ctx, FORM, pageNumber, SettingsHttp } from '../settings/settings-http';
import { ConfirmPage, render, when } from '../settings/ui';
import { filterFields, statusField, underFilter } from './filter';
import { PER_PAGE, ResponsePage, ResponsesPage } from './results.pages';
import { minRoleOf, ResultsService } from './results.service';

/**
 * A form's responses (every role from viewer up): the table, newest first, 50 a page (deep pages
 * through the seq seek table: ResponsesService.list), filtered by one question's answer and days;
 * one response in full; and Delete for editors (a person's request to be forgotten), asked first.
 */
@Public()
@ApiExcludeController()
@Controller('settings/w/:slug/forms/:formId/responses')
export class ResponsesResultsController {
  constructor(
    private readonly http: SettingsHttp,
    private readonly results: ResultsService,
  ) {}

  @Get()
  list(@Param('formId') formId: string, @Req() req: Request, @Res() res: Response) {
    return this.http.run(req, res, 'viewer', async (ctx) => {
      const query = req.query as Record<string, unknown>;
      const form = await this.results.form(ctx.access, formId);
      const fields = filterFields(query);
      // Completed (default), in progress or both, as list_responses' `status`.
      const chosen = statusField(query);
      const refusedStatus = Object.keys(chosen.errors).length > 0;
      const page = pageNumber(query);
      // A refused filter: the page again, the problems beside its fields (400).
      const read = await underFilter(form, fields, async (filter) =>
        refusedStatus
          ? undefined
          : this.results.page(ctx.access, form.publicId, {
              offset: (page - 1) * PER_PAGE,
              limit: PER_PAGE,
              filter,
              status: chosen.status,
            }),
      );
      const found = read.found;
      const errors = { ...read.errors, ...chosen.errors };
      const html = render(
        <ResponsesPage
          ctx={ctx}
          form={form}
          fields={fields}
          status={chosen.status}
          errors={errors}
          {...(found ?? { total: 0, responses: [] })}
          page={page}
        />,
      );
      this.http.send(res, found ? 200 : 400, html);
    });
  }

  @Get(':responseId')
  one(@Param() p: { formId: string; responseId: string }, @Req() req: Request, @Res() res: Response) {
    return this.http.run(req, res, 'viewer', async (ctx) => {
      const form = await this.results.form(ctx.access, p.formId);
      const response = await this.results.response(ctx.access, form.publicId, p.responseId);
      this.http.send(res, 200, render(<ResponsePage ctx={ctx} form={form} response={response} />));
    });
  }

  /** Delete one response: the question (the settings' confirmation page), then the post does it. */
  @Get(':responseId/delete')
  ask(@Param() p: { formId: string; responseId: string }, @Req() req: Request, @Res() res: Response) {
    return this.deleting(req, res, p, async (ctx, here, submittedAt) => {
      const page = (
        <ConfirmPage
          chrome={{ ...ctx.chrome, current: 'forms' }}
          title="Delete this response?"
          question={`The response of ${when(submittedAt)} will be deleted for good, with its answers.`}
          button="Delete response"
          action={`${here}/${p.responseId}/delete`}
          back={`${here}/${p.responseId}`}
        />
      );
      this.http.send(res, 200, render(page));
    });
  }

  @Post(':responseId/delete')
  @RouteConfig(FORM)
  remove(@Param() p: { formId: string; responseId: string }, @Req() req: Request, @Res() res: Response) {
    return this.deleting(req, res, p, async (ctx, here) => {
      await this.results.removeResponse(ctx.access, p.formId, p.responseId);
      this.http.seeOther(res, here, 'response-deleted');
    });
  }

  private deleting(
    req: Request,
    res: Response,
    p: { formId: string; responseId: string },
    fn: (ctx: Ctx, here: string, submittedAt: string | null) => Promise<void>,
  ) {
    return this.http.run(req, res, minRoleOf('deleteResponse'), async (ctx) => {
      const response = await this.results.response(ctx.access, p.formId, p.responseId);
      await fn(ctx, `${ctx.base}/forms/${encodeURIComponent(p.formId)}/responses`, response.submittedAt);
    });
  }
}
