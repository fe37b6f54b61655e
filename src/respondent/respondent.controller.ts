import { Controller, Get, Param, Post, Req, Res } from '@nestjs/common';
import { RouteConfig } from '@nestjs/platform-fastify';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply as Response, FastifyRequest as Request } from 'fastify';
import { formPost, isFormPost, isJsonRequest, parseJson } from '../common/http/body';
import { Public } from '../auth/public.decorator';
import { ApiError } from '../common/errors/api-error';
import { FormsService } from '../forms/forms.service';
import { ResponsesService } from '../responses/responses.service';
import { answersFromFormPost, formPage, messagePage, RawAnswers, thankYouPage } from './respondent.page';

/** What a form's public id can look like (anything else is not a form, and never reaches the database). */
const PUBLIC_ID = /^[0-9A-Za-z_-]{1,64}$/;

/** Pages are whole documents with inline styles only: nothing else may load or run in them. */
const PAGE_HEADERS = {
  'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-store',
};

/**
 * The page where people answer a published form: GET shows it; POST takes the form post (and
 * answers with a page) or JSON `{ "answers": { blockId: value } }` for embedding (and answers with
 * JSON). No credential; the per-IP budget applies. Submissions are validated by the same code as
 * create_response, and a refused one stores nothing.
 */
@Public()
@ApiExcludeController()
@Controller('f')
export class RespondentController {
  constructor(
    private readonly forms: FormsService,
    private readonly responses: ResponsesService,
  ) {}

  @Get(':publicId')
  async show(@Param('publicId') publicId: string, @Res() res: Response) {
    const form = await this.findForm(publicId);
    if (!form) return sendPage(res, 404, messagePage('Form not found', 'There is no form at this address. Check the link you were given.'));
    if (form.status !== 'published') return sendPage(res, 409, notAcceptingPage(form.status));
    sendPage(res, 200, formPage(form));
  }

  /** Form posts: flat fields (repeated names, as checkboxes send them, become lists), 200 KB, 1,000 fields. */
  @Post(':publicId')
  @RouteConfig(formPost(200 * 1024, 1000))
  async submit(@Param('publicId') publicId: string, @Req() req: Request, @Res() res: Response) {
    if (!PUBLIC_ID.test(publicId)) {
      if (isJsonRequest(req)) throw new ApiError('not_found', { message: 'There is no form at this address.', hint: 'Check the link you were given.' });
      return sendPage(res, 404, messagePage('Form not found', 'There is no form at this address. Check the link you were given.'));
    }
    if (isJsonRequest(req)) {
      const answers = (parseJson(String(req.body ?? '')) as { answers?: unknown } | undefined)?.answers;
      if (!answers || typeof answers !== 'object' || Array.isArray(answers)) {
        throw new ApiError('invalid_arguments', {
          message: 'The body must be { "answers": { "<blockId>": value } }.',
          details: [{ path: '/answers', message: 'must be an object of answers by block id' }],
        });
      }
      const response = await this.responses.submit(publicId, answers as Record<string, unknown>);
      res.status(201).send(response);
      return;
    }

    // A browser's form post.
    const form = await this.findForm(publicId);
    if (!form) return sendPage(res, 404, messagePage('Form not found', 'There is no form at this address. Check the link you were given.'));
    const raw = (isFormPost(req) ? req.body : {}) as RawAnswers;
    try {
      await this.responses.submit(publicId, answersFromFormPost(form.blocks, raw));
    } catch (err) {
      if (err instanceof ApiError && err.code === 'invalid_arguments') return sendPage(res, 400, formPage(form, raw, err.details ?? []));
      if (err instanceof ApiError && err.code === 'form_not_accepting_responses') return sendPage(res, 409, notAcceptingPage(form.status));
      throw err;
    }
    sendPage(res, 200, thankYouPage(form));
  }

  /** The form, or undefined when there is none (any other failure, say the database, stays an error). */
  private async findForm(publicId: string) {
    if (!PUBLIC_ID.test(publicId)) return undefined;
    try {
      return await this.forms.getPublic(publicId);
    } catch (err) {
      if (err instanceof ApiError && err.code === 'not_found') return undefined;
      throw err;
    }
  }
}

function notAcceptingPage(status: string): string {
  return status === 'closed'
    ? messagePage('This form is closed', 'It no longer takes responses. Thank you for your interest.')
    : messagePage('This form is not open yet', 'It does not take responses yet. Try again later.');
}

function sendPage(res: Response, status: number, html: string) {
  res.status(status).headers(PAGE_HEADERS).type('text/html; charset=utf-8').send(html);
}
