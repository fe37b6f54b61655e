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
import { ApiError } from '../common/errors/api-error';
import type { FormUpdate } from '../forms/forms.service';
import { FieldErrors } from '../settings/ui';
import { FormsPage, ResponsesPage, SettingsPage, SettingsValues, SharePage, SummaryPage } from './results.pages';
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

  @Get('w/:slug/forms/:formId/settings')
  settings(@Param('formId') formId: string, @Req() req: Request, @Res() res: Response) {
    return this.http.run(req, res, minRoleOf('update'), async (ctx) => {
      const form = await this.results.form(ctx.access, formId);
      this.http.send(res, 200, render(<SettingsPage ctx={ctx} form={form} values={storedValues(form)} errors={{}} />));
    });
  }

  /**
   * The form's settings (issue 47) through update_form's service and rules: only the values changed
   * are sent (a cap kept as it was is not checked again); a value it refuses is shown at its field.
   */
  @Post('w/:slug/forms/:formId/settings')
  @RouteConfig(FORM)
  saveSettings(@Param('formId') formId: string, @Req() req: Request, @Res() res: Response) {
    return this.http.run(req, res, minRoleOf('update'), async (ctx: Ctx) => {
      const form = await this.results.form(ctx.access, formId);
      const values: SettingsValues = {
        opensAt: text(ctx.body.opensAt).trim(),
        closesAt: text(ctx.body.closesAt).trim(),
        maxResponses: text(ctx.body.maxResponses).trim(),
        access: text(ctx.body.access),
        spamProtection: text(ctx.body.spamProtection),
      };
      const { update, errors } = settingsUpdate(form.publicId, values, storedValues(form));
      // The version the page was drawn from: a change made meanwhile is refused (version_conflict), not overwritten.
      const version = text(ctx.body.version);
      if (/^\d{1,9}$/.test(version)) update.ifVersion = Number(version);
      if (text(ctx.body.closeNow) === '1') update.closeNow = true;
      if (!Object.keys(errors).length) {
        try {
          await this.results.updateSettings(ctx.access, update);
          return this.http.seeOther(res, `${ctx.base}/forms/${form.publicId}/settings`, 'form-settings-saved');
        } catch (err) {
          if (!(err instanceof ApiError) || err.code !== 'invalid_arguments') throw err;
          Object.assign(errors, refusedFields(err));
        }
      }
      this.http.send(res, 400, render(<SettingsPage ctx={ctx} form={form} values={values} errors={errors} />));
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

const SETTING_LABELS: Record<keyof SettingsValues, string> = {
  opensAt: 'Opens at',
  closesAt: 'Closes at',
  maxResponses: 'Most responses',
  access: 'Who may answer',
  spamProtection: 'Spam protection',
};

/** A stored time as the page shows it: 2030-01-31 09:00 (UTC), with seconds only when it has some. */
const shownTime = (d: Date | null | undefined) =>
  d
    ? d
        .toISOString()
        .replace('T', ' ')
        .replace(/(:00)?\.000Z$/, '')
    : '';

function storedValues(form: FormRecord): SettingsValues {
  return {
    opensAt: shownTime(form.opensAt),
    closesAt: shownTime(form.closesAt),
    maxResponses: form.maxResponses == null ? '' : String(form.maxResponses),
    access: form.access ?? 'public',
    spamProtection: form.spamProtection ?? 'auto',
  };
}

/** A typed time: "2030-01-31 09:00" is UTC; ISO 8601 needs its zone; empty clears. */
function typedTime(value: string): string | null | undefined {
  if (!value) return null;
  const utc = /^\d{4}-\d\d-\d\d[ T]\d\d:\d\d(:\d\d)?$/.test(value) ? `${value.replace(' ', 'T')}Z` : value;
  const zoned = /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)$/i.test(utc);
  return zoned && !Number.isNaN(Date.parse(utc)) ? new Date(utc).toISOString() : undefined;
}

/** The update_form input of what changed, or the problems of what cannot be read, in the page's words. */
function settingsUpdate(publicId: string, v: SettingsValues, stored: SettingsValues) {
  const update: FormUpdate = { publicId };
  const errors: FieldErrors = {};
  for (const key of ['opensAt', 'closesAt'] as const) {
    if (v[key] === stored[key]) continue;
    const at = typedTime(v[key]);
    if (at === undefined)
      errors[key] = `${SETTING_LABELS[key]}: enter a date and time such as 2030-01-31 09:00 (UTC), or leave it empty`;
    else update[key] = at;
  }
  if (v.maxResponses !== stored.maxResponses) {
    const n = Number(v.maxResponses);
    if (!v.maxResponses) update.maxResponses = null;
    else if (Number.isInteger(n) && n >= 1 && n <= 1_000_000_000) update.maxResponses = n;
    else errors.maxResponses = 'Most responses: enter a whole number of 1 or more, or leave it empty for no limit';
  }
  if (v.access !== stored.access) {
    if (v.access === 'public' || v.access === 'invite') update.access = v.access;
    else errors.access = 'Who may answer: choose one of the options';
  }
  if (v.spamProtection !== stored.spamProtection) {
    if (['off', 'auto', 'always'].includes(v.spamProtection))
      update.spamProtection = v.spamProtection as FormUpdate['spamProtection'];
    else errors.spamProtection = 'Spam protection: choose one of the options';
  }
  return { update, errors };
}

/** update_form's refusal at the page's fields ("/maxResponses" at Most responses), in the page's words (no tool hint). */
function refusedFields(err: ApiError): FieldErrors {
  const errors: FieldErrors = {};
  const words = (m: string) =>
    m.replace(/\bclosesAt\b/g, 'the closing time').replace(/\bopensAt\b/g, 'the opening time');
  for (const d of err.details ?? []) {
    const key = d.path.replace(/^\//, '') as keyof SettingsValues;
    const field = key in SETTING_LABELS ? key : 'opensAt';
    const more = field === 'maxResponses' ? ' (or tick the box below it to keep the limit and close the form now)' : '';
    errors[field] = `${SETTING_LABELS[field]}: ${words(d.message)}${more}`;
  }
  if (!Object.keys(errors).length) errors.opensAt = words(err.message);
  return errors;
}
