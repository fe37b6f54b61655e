import { Controller, Inject, Param, Post, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { RouteConfig } from '@nestjs/platform-fastify';
import type { FastifyReply as Response, FastifyRequest as Request } from 'fastify';
import { Public } from '../auth/public.decorator';
import { ApiError } from '../common/errors/api-error';
import { formPost, isFormPost, isJsonRequest, parseJson } from '../common/http/body';
import { APP_CONFIG, AppConfig } from '../config/config';
import { EmailService } from '../email/email.service';
import { FormsService } from '../forms/forms.service';
import { PartialResponsesService } from '../responses/partial-responses.service';
import { WorkspacesService } from '../workspaces/workspaces.service';
import { pageHeaders, postOrigin, prefersJson } from './page-headers';
import { savesPartials } from './partial-walk';
import { savedPage } from './respondent.page';

const PUBLIC_ID = /^[0-9A-Za-z_-]{1,64}$/;

/** Why a request to email the link is refused: the page's words, and the API's code and hint. */
const REFUSALS = {
  invalid: {
    status: 400,
    code: 'invalid_arguments' as const,
    words: 'Enter one email address, like name@example.com.',
    hint: 'Send one address in "email", like name@example.com.',
  },
  address: {
    status: 429,
    code: 'rate_limited' as const,
    words: 'This address was sent 3 messages about forms in the last hour. Copy the link above instead, or try later.',
    hint: 'At most 3 messages an hour go to one address: copy the link instead, or retry after Retry-After seconds.',
  },
  client: {
    status: 429,
    code: 'rate_limited' as const,
    words: 'Too many links were emailed from here in the last hour. Copy the link above instead, or try later.',
    hint: 'At most 10 links an hour are emailed for one client: copy the link instead, or retry after Retry-After seconds.',
  },
  form: {
    status: 429,
    code: 'rate_limited' as const,
    words: 'This form emailed too many links in the last hour. Copy the link above instead, or try later.',
    hint: 'A form emails at most 200 links an hour: copy the link instead, or retry after Retry-After seconds.',
  },
};

/**
 * "Email me the link" (issue 48, item 5): after "Save and finish later", the page posts an address
 * and the partial's resume secret here; the link is queued to that address (checked, and limited
 * per recipient, client and form). The secret is sealed in the outbox row and never logged. A
 * browser's post gets the saved page again, saying what happened; a JSON post gets JSON.
 */
@Public()
@ApiExcludeController()
@Controller('f')
export class ResumeEmailController {
  constructor(
    private readonly forms: FormsService,
    private readonly partials: PartialResponsesService,
    private readonly workspaces: WorkspacesService,
    private readonly email: EmailService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Post(':publicId/email-link')
  @RouteConfig(formPost(4096, 4))
  async emailLink(@Param('publicId') publicId: string, @Req() req: Request, @Res() res: Response) {
    const json = isJsonRequest(req) || prefersJson(req.headers.accept);
    const form = PUBLIC_ID.test(publicId) ? await this.forms.getPublic(publicId).catch(() => undefined) : undefined;
    if (!form || form.status !== 'published' || !savesPartials(form))
      throw new ApiError('not_found', {
        message: 'No form here saves answers to finish later.',
        hint: 'Open the form and use "Save and finish later" first.',
      });
    const origins = await this.workspaces.embedOriginsOf(form.workspaceId);
    const own = [new URL(this.config.publicUrl).origin, `${req.protocol}://${req.headers.host ?? ''}`];
    if (postOrigin(req.headers, own, origins) === 'cross-site')
      throw new ApiError('origin_not_allowed', {
        message: 'This post did not come from the form’s page.',
        hint: 'Ask for the link on the form’s own page.',
      });
    const sent = isJsonRequest(req) ? parseJson(String(req.body ?? '')) : isFormPost(req) ? req.body : undefined;
    const body = (sent && typeof sent === 'object' ? sent : {}) as Record<string, unknown>;
    const secret = typeof body._resume === 'string' ? body._resume : '';
    if ((await this.partials.resume(form.id, secret)).kind !== 'partial')
      throw new ApiError('not_found', {
        message: 'This link to finish later does not open any answers (submitted, moved or expired).',
        hint: 'Open the form again and save your answers again.',
      });
    const queued = await this.email.queueResumeLink({
      workspaceId: form.workspaceId,
      formId: form.id,
      address: body.email,
      clientIp: req.ip,
      secret,
    });
    const address = typeof body.email === 'string' ? body.email.slice(0, 254) : undefined;
    const link = `${this.config.publicUrl}/f/${form.publicId}?resume=${secret}`;
    const days = this.config.partialResponseRetentionDays;
    if ('queued' in queued) {
      if (json) return void res.status(202).send({ sent: true, to: queued.queued });
      const sent = `We are sending the link to ${queued.queued}. It may take a few minutes to arrive.`;
      return void res
        .status(200)
        .headers(pageHeaders(origins))
        .type('text/html; charset=utf-8')
        .send(savedPage(form, link, days, { secret, address: queued.queued, sent }));
    }
    const refusal = REFUSALS['invalid' in queued ? 'invalid' : queued.limited];
    if (json) {
      if (refusal.status === 429) res.header('Retry-After', '3600');
      throw new ApiError(refusal.code, {
        message: refusal.words,
        hint: refusal.hint,
        ...(refusal.status === 400 ? { details: [{ path: '/email', message: 'is not one email address' }] } : {}),
      });
    }
    res
      .status(refusal.status)
      .headers({ ...pageHeaders(origins), ...(refusal.status === 429 ? { 'Retry-After': '3600' } : {}) })
      .type('text/html; charset=utf-8')
      .send(savedPage(form, link, days, { secret, address, problem: refusal.words }));
  }
}
