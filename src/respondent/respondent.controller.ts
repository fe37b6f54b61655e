import { Controller, Get, Param, Post, Req, Res } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { RouteConfig } from '@nestjs/platform-fastify';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply as Response, FastifyRequest as Request } from 'fastify';
import { formPost, isFormPost, isJsonRequest, parseJson } from '../common/http/body';
import { Public } from '../auth/public.decorator';
import { ApiError, ErrorDetail } from '../common/errors/api-error';
import { sendScript } from '../common/html';
import { inTransaction } from '../database/transaction';
import { blocksView } from '../forms/form-logic';
import { FormRecord, FormsService } from '../forms/forms.service';
import { SessionsService } from '../settings/sessions.service';
import { notAccepting, ResponsesService } from '../responses/responses.service';
import { WorkspacesService } from '../workspaces/workspaces.service';
import { pageHeaders, prefersJson } from './page-headers';
import { PageState, PageStateSigner, STATE_MAX_AGE_MS } from './page-state';
import { answersFromFormPost, formPage, messagePage, RawAnswers, stepPage, thankYouPage } from './respondent.page';
import { RESPONDENT_SCRIPT } from './respondent.script';
import {
  blockIdOf,
  hiddenFromQuery,
  keepPage,
  nextPage,
  Page,
  pageLogic,
  pageProblems,
  pagesOf,
  route,
  Route,
  seenOn,
  shownBlocks,
  stateTooLarge,
  walksPages,
} from './respondent.steps';

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
    private readonly states: PageStateSigner,
    private readonly sessions: SessionsService,
    @InjectDataSource() private readonly db: DataSource,
  ) {}

  /** The pages' one script (respondent.script.ts): same-page questions appear at once. The pages work without it. */
  @Get('assets/respondent.js')
  script(@Res() res: Response) {
    sendScript(res, RESPONDENT_SCRIPT);
  }

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
    if (!walksPages(form)) return sendPage(res, 200, formPage(form), headers);
    const state = this.newState(form, {}, hiddenFromQuery(form.hiddenFields, req.query));
    const r = route(form, state.a, state.h);
    sendPage(res, 200, await this.drawStep(form, state, r.onPath[0] ?? r.pages[0], r), headers);
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
      const body = parseJson(String(req.body ?? '')) as { answers?: unknown; hidden?: unknown } | undefined;
      const answers = body?.answers;
      if (!answers || typeof answers !== 'object' || Array.isArray(answers)) {
        throw new ApiError('invalid_arguments', {
          message: 'The body must be { "answers": { "<blockId>": value } }.',
          details: [{ path: '/answers', message: 'must be an object of answers by block id' }],
        });
      }
      const hidden = body?.hidden;
      if (hidden !== undefined && (!hidden || typeof hidden !== 'object' || Array.isArray(hidden))) {
        throw new ApiError('invalid_arguments', {
          message: 'hidden must be an object of values by hidden field name.',
          details: [{ path: '/hidden', message: 'must be an object of text values by hidden field name' }],
        });
      }
      const response = await this.responses.submit(
        publicId,
        answers as Record<string, unknown>,
        hidden as Record<string, string> | undefined,
      );
      res.status(201).send(response);
      return;
    }

    // A browser's form post.
    const form = await this.findForm(publicId);
    if (!form) return sendPage(res, 404, notFoundPage());
    const raw = (isFormPost(req) ? req.body : {}) as RawAnswers;
    const headers = pageHeaders(await this.workspaces.embedOriginsOf(form.workspaceId));
    if (walksPages(form)) {
      if (form.status !== 'published') return sendPage(res, 409, notAcceptingPage(form.status), headers);
      const [status, html] = await this.step(form, raw);
      return sendPage(res, status, html, headers);
    }
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

  /**
   * One step of the walk through a form of several pages (docs/respondent.md). The post carries
   * the signed state (answers so far, pages visited, nonce) and the current page's fields; the
   * forms' one evaluator (route(): validateResponse, so walk()) decides what is shown next:
   * - Back: keeps the page's answers and shows the previous page, without checking them;
   * - Next: when the answers show blocks on this page that it did not show (nor its script, which
   *   lists those it showed in _seen), the same page again (a person sees the new questions before
   *   moving on); else the page's problems with the error summary; else the next page on the path;
   *   else (the answers end the form there: last page, or a jump to end) the submission, whether
   *   the button said Next or Submit: the person saw every question these answers ask, and
   *   showing the page again only to change the button was a step for nothing (issue 34). It is
   *   stored once per nonce (a double click or a replayed post finds its nonce used, in the same
   *   transaction as the response, and gets the thank-you page).
   * - Both: when the answers have grown too large to carry in the page (stateTooLarge), the same
   *   page with a problem on its longest answer, rather than a next post over the body limit.
   * A post without a valid state (an old page, another form's) starts the walk again with the
   * answers it carries.
   */
  private async step(form: FormRecord, raw: RawAnswers): Promise<[number, string]> {
    const pages = pagesOf(form.blocks);
    const verified = await this.states.verify(raw._state, form.id);
    const state = verified ?? this.newState(form, {}, {});
    // The current page; a page the form no longer has sends the walk back to the first page.
    let current = pages.find((p) => p.key === state.s[state.s.length - 1]);
    if (!current) {
      current = pages[0];
      state.s = [current.key];
    }
    const before = state.a;
    state.a = keepPage(current, state.a, raw);
    const action = Array.isArray(raw._action) ? raw._action[0] : raw._action;
    const tooLarge = stateTooLarge(state, current);
    if (tooLarge) {
      // Signed with the answers before this page's (so the next post fits), drawn with what was typed.
      const kept = { ...state, a: before };
      const r = route(form, state.a, state.h);
      return [400, await this.drawStep(form, kept, current, r, [tooLarge], undefined, state.a)];
    }

    if (action === 'back' && state.s.length > 1) {
      state.s = state.s.slice(0, -1);
      const back = pages.find((p) => p.key === state.s[state.s.length - 1]) ?? pages[0];
      return [200, await this.drawStep(form, state, back, route(form, state.a, state.h))];
    }

    const r = route(form, state.a, state.h);
    const drawn = new Set([...state.r, ...seenOn(current, raw)]);
    if (verified && shownBlocks(current, r).some((b) => !drawn.has(b.id)))
      return [
        200,
        await this.drawStep(
          form,
          state,
          current,
          r,
          [],
          'Your answers added questions to this page. Answer them, then go on.',
        ),
      ];
    const problems = pageProblems(current, r);
    if (problems.length) return [400, await this.drawStep(form, state, current, r, problems)];
    const next = nextPage(current.key, r);
    if (next) {
      state.s = [...state.s, next.key];
      return [200, await this.drawStep(form, state, next, r)];
    }

    // The end of the path: submit, once per nonce.
    if (Date.now() - state.t > STATE_MAX_AGE_MS) {
      // The nonce may be forgotten by now: show the page again with a fresh one, to be sent again.
      const fresh = { ...state, n: this.sessions.nonce(), t: Date.now() };
      return [200, await this.drawStep(form, fresh, current, r, [], 'Check your answers, then submit them.')];
    }
    try {
      await inTransaction(this.db, async () => {
        // (useNonce and submit both use the transaction's manager: currentManager.)
        if (await this.sessions.useNonce(`respondent:${state.n}`))
          await this.responses.submit(form.publicId, r.answers, state.h);
      });
    } catch (err) {
      if (err instanceof ApiError && err.code === 'invalid_arguments') {
        // The form changed under the walk (or a state from before): show the first page with a problem.
        const details = err.details ?? [];
        const wrong = new Set(details.map((d) => blockIdOf(d.path)));
        const at = r.onPath.find((p) => p.blocks.some((b) => wrong.has(b.id))) ?? current;
        const visited = state.s.indexOf(at.key);
        state.s = visited >= 0 ? state.s.slice(0, visited + 1) : [...state.s, at.key];
        return [400, await this.drawStep(form, state, at, r, details)];
      }
      if (err instanceof ApiError && err.code === 'form_not_accepting_responses')
        return [409, notAcceptingPage(form.status)];
      throw err;
    }
    return [200, thankYouPage(form)];
  }

  private newState(form: FormRecord, answers: RawAnswers, hidden: Record<string, string>): PageState {
    const first = route(form, answers, hidden).onPath[0];
    return { f: form.id, n: this.sessions.nonce(), t: Date.now(), a: answers, h: hidden, s: [first?.key ?? ''], r: [] };
  }

  /** Draws `page` with the state signed into it (the blocks it shows recorded as drawn; a fresh issue time). */
  private async drawStep(
    form: FormRecord,
    state: PageState,
    page: Page,
    r: Route,
    errors: ErrorDetail[] = [],
    notice?: string,
    values = state.a,
  ): Promise<string> {
    const blocks = shownBlocks(page, r);
    const position = Math.max(1, r.onPath.indexOf(page) + 1);
    const signed = await this.states.sign({ ...state, t: Date.now(), r: blocks.map((b) => b.id) });
    return stepPage(
      form,
      {
        start: page.start,
        blocks,
        all: page.blocks,
        logic: pageLogic(page, r),
        position,
        total: Math.max(position, r.onPath.length),
        state: signed,
        back: state.s.length > 1,
        last: !nextPage(page.key, r),
        notice,
      },
      values,
      errors,
    );
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
    blocks: blocksView(form.blocks),
    ...(form.hiddenFields?.length ? { hiddenFields: form.hiddenFields } : {}),
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
