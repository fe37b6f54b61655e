import { Controller, Get, Param, Post, Req, Res } from '@nestjs/common';
import { RouteConfig } from '@nestjs/platform-fastify';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply as Response, FastifyRequest as Request } from 'fastify';
import { formPost, isFormPost, isJsonRequest, parseJson } from '../common/http/body';
import { Public } from '../auth/public.decorator';
import { ApiError } from '../common/errors/api-error';
import { blockView } from '../forms/blocks';
import { FormRecord, FormsService } from '../forms/forms.service';
import { notAccepting, ResponsesService } from '../responses/responses.service';
import { WorkspacesService } from '../workspaces/workspaces.service';
import { pageHeaders, prefersJson } from './page-headers';
import { answersFromFormPost, formPage, messagePage, RawAnswers, thankYouPage } from './respondent.page';

/** What a form's public id can look like (anything else is not a form, and never reaches the database). */
const PUBLIC_ID = /^[0-9A-Za-z_-]{1,64}$/;

/**
 * The page where people answer a published form: GET shows it (or, to a client that prefers
 * JSON, answers the form as JSON for embedding); POST takes the form post (and answers with a
 * page) or JSON `{ "answers": { blockId: value } }` for embedding (and answers with JSON). No
 * credential; the per-IP budget applies. Submissions are validated by the same code as
 * create_response, and a refused one stores nothing. Pages may be framed only by the origins the
 * form's workspace lists (see pageHeaders).
 */
@Public()
@ApiExcludeController()
@Controller('f')
export class RespondentController {
  constructor(
    private readonly forms: FormsService,
    private readonly responses: ResponsesService,
    private readonly workspaces: WorkspacesService,
  ) {}

  @Get(':publicId')
  async show(@Param('publicId') publicId: string, @Req() req: Request, @Res() res: Response) {
    res.header('Vary', 'Accept'); // the same URL answers HTML or JSON
    const form = await this.findForm(publicId);
    if (prefersJson(req.headers.accept)) {
      if (!form) throw formNotFound();
      if (form.status !== 'published') throw notAccepting(form.status);
      res.status(200).header('Cache-Control', 'no-store').send(formForEmbedding(form));
      return;
    }
    if (!form) return sendPage(res, 404, notFoundPage());
    const headers = pageHeaders(await this.workspaces.embedOriginsOf(form.workspaceId));
    if (form.status !== 'published') return sendPage(res, 409, notAcceptingPage(form.status), headers);
    sendPage(res, 200, formPage(form), headers);
  }

  /** Form posts: flat fields (repeated names, as checkboxes send them, become lists), 200 KB, 1,000 fields. */
  @Post(':publicId')
  @RouteConfig(formPost(200 * 1024, 1000))
  async submit(@Param('publicId') publicId: string, @Req() req: Request, @Res() res: Response) {
    if (!PUBLIC_ID.test(publicId)) {
      if (isJsonRequest(req)) throw formNotFound();
      return sendPage(res, 404, notFoundPage());
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
    if (!form) return sendPage(res, 404, notFoundPage());
    const raw = (isFormPost(req) ? req.body : {}) as RawAnswers;
    const headers = pageHeaders(await this.workspaces.embedOriginsOf(form.workspaceId));
    try {
      await this.responses.submit(publicId, answersFromFormPost(form.blocks, raw));
    } catch (err) {
      if (err instanceof ApiError && err.code === 'invalid_arguments')
        return sendPage(res, 400, formPage(form, raw, err.details ?? []), headers);
      if (err instanceof ApiError && err.code === 'form_not_accepting_responses')
        return sendPage(res, 409, notAcceptingPage(form.status), headers);
      throw err;
    }
    sendPage(res, 200, thankYouPage(form), headers);
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

/** A published form as the respondent sees it, for a page that embeds it (nothing internal: no ids but the public ones, no dates). */
function formForEmbedding(form: FormRecord) {
  return {
    publicId: form.publicId,
    title: form.title,
    description: form.description,
    blocks: form.blocks.map(blockView),
  };
}

function formNotFound(): ApiError {
  return new ApiError('not_found', {
    message: 'There is no form at this address.',
    hint: 'Check the link you were given.',
  });
}

function notFoundPage(): string {
  return messagePage('Form not found', 'There is no form at this address. Check the link you were given.');
}

function notAcceptingPage(status: string): string {
  return status === 'closed'
    ? messagePage(
        'This form is closed',
        'This form is no longer accepting responses. If you still need to answer it, contact the person or organisation who sent you the form.',
      )
    : messagePage(
        'This form is not open yet',
        'This form is not accepting responses yet. Try again later, or contact the person or organisation who sent you the form.',
      );
}

/** Without the form's headers (an unknown form, say), no site may frame the page. */
function sendPage(res: Response, status: number, html: string, headers = pageHeaders([])) {
  res.status(status).headers(headers).type('text/html; charset=utf-8').send(html);
}
