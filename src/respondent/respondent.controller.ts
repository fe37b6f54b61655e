import { Controller, Get, Inject, Param, Post, Req, Res } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { RouteConfig } from '@nestjs/platform-fastify';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply as Response, FastifyRequest as Request } from 'fastify';
import { formPost, isFormPost, isJsonRequest, isMultipart, MultipartConfig, parseJson } from '../common/http/body';
import { Public } from '../auth/public.decorator';
import { ApiError, ErrorDetail, pointerSegment } from '../common/errors/api-error';
import { sendScript } from '../common/html';
import { currentManager, inTransaction } from '../database/transaction';
import type { Readable } from 'node:stream';
import { blocksView } from '../forms/form-logic';
import { FormRecord, FormsService } from '../forms/forms.service';
import { SessionsService } from '../settings/sessions.service';
import { notAccepting, ResponsesService, ResponseView } from '../responses/responses.service';
import { endOfSubmitted, EndView, endView, recallBlock, recallLogic, valuesBefore } from './recall-page';
import { PartialResponsesService } from '../responses/partial-responses.service';
import { APP_CONFIG, AppConfig } from '../config/config';
import { WorkspacesService } from '../workspaces/workspaces.service';
import { Block, UPLOAD_ID } from '../forms/blocks';
import { fileLimitBytes, MB, UploadsService } from '../uploads/uploads.service';
import { FileStorage } from '../storage/file-storage';
import { FilePart, readMultipartPost } from './multipart-post';
import { pageHeaders, prefersJson } from './page-headers';
import { PageState, PageStateSigner, STATE_MAX_AGE_MS } from './page-state';
import { partialAnswers, resumeCookie, resumedWalk, resumeSecretOf, savesPartials } from './partial-walk';
import {
  alreadySubmittedPage,
  answersFromFormPost,
  FileView,
  formPage,
  messagePage,
  RawAnswers,
  savedPage,
  stepPage,
  thankYouPage,
} from './respondent.page';
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
    private readonly uploads: UploadsService,
    private readonly storage: FileStorage,
    private readonly partials: PartialResponsesService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
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
    const headers = await this.headersFor(form);
    if (form.status !== 'published') return sendPage(res, 409, notAcceptingPage(form.status), headers);
    if (!walksPages(form)) return sendPage(res, 200, formPage(form, {}, [], await this.fileView(form, {})), headers);
    const resumed = savesPartials(form) ? await this.resume(form, req) : undefined;
    if (resumed) return sendPage(res, 200, resumed.html, { ...headers, 'Set-Cookie': resumed.cookie });
    const state = this.newState(form, {}, hiddenFromQuery(form.hiddenFields, req.query));
    const r = route(form, state.a, state.h);
    sendPage(res, 200, await this.drawStep(form, state, r.onPath[0] ?? r.pages[0], r), headers);
  }

  /**
   * Where the page's script sends a chosen file (JSON `{ block, filename, contentType, size }`):
   * a pending upload and its target, as create_upload answers, on the form's workspace's plan. The
   * browser then PUTs the bytes straight there and the form posts the upload id.
   */
  @Post(':publicId/uploads')
  async createUpload(@Param('publicId') publicId: string, @Req() req: Request, @Res() res: Response) {
    const form = await this.findForm(publicId);
    if (!form) throw formNotFound();
    if (form.status !== 'published') throw notAccepting(form.status);
    const body = isJsonRequest(req) ? parseJson(String(req.body ?? '')) : undefined;
    const { block, filename, contentType, size } = (body ?? {}) as Record<string, unknown>;
    const bad = [
      typeof block !== 'string' && { path: '/block', message: 'must be the block id' },
      typeof filename !== 'string' && { path: '/filename', message: 'must be the file name' },
      typeof contentType !== 'string' && { path: '/contentType', message: 'must be the file type' },
      !(Number.isInteger(size) && (size as number) > 0) && { path: '/size', message: 'must be the size in bytes' },
    ].filter((d): d is ErrorDetail => !!d);
    if (bad.length)
      throw new ApiError('invalid_arguments', {
        message: 'The body must be { "block", "filename", "contentType", "size" } of the chosen file.',
        hint: 'Send the block id, the file name, its type and its size in bytes, as JSON.',
        details: bad,
      });
    const created = await this.uploads.create({
      workspaceId: form.workspaceId,
      plan: await this.workspaces.planOf(form.workspaceId),
      form,
      block: block as string,
      filename: filename as string,
      contentType: contentType as string,
      size: size as number,
    });
    res.status(201).header('Cache-Control', 'no-store').send(created);
  }

  /**
   * Form posts: flat fields (repeated names, as checkboxes send them, become lists), 200 KB, 1,000
   * fields; a form with file questions posts multipart/form-data, its files streamed to storage.
   */
  @Post(':publicId')
  @RouteConfig({ ...formPost(200 * 1024, 1000), multipart: true } satisfies MultipartConfig & object)
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
    if (!form)
      return sendPage(res, 404, notFoundPage(), { ...pageHeaders([]), ...(isMultipart(req) ? closing() : {}) });
    const headers = await this.headersFor(form);
    let raw = (isFormPost(req) ? req.body : {}) as RawAnswers;
    const fileProblems: ErrorDetail[] = [];
    if (isMultipart(req)) {
      // Nothing is stored for a form that takes no answers; the unread body closes the connection.
      if (form.status !== 'published')
        return sendPage(res, 409, notAcceptingPage(form.status), { ...headers, ...closing() });
      try {
        raw = await this.receiveFiles(form, req, fileProblems);
      } catch (err) {
        if (err instanceof ApiError && err.code === 'payload_too_large')
          return sendPage(res, 413, tooLargePage(form, err.message), { ...headers, ...closing() });
        // A sender that stopped: answer and close, so its socket does not stay open behind the page.
        if (err instanceof ApiError && err.code === 'request_timeout')
          return sendPage(res, 408, stalledPage(form), { ...headers, ...closing() });
        throw err;
      }
    }
    if (walksPages(form)) {
      if (form.status !== 'published') return sendPage(res, 409, notAcceptingPage(form.status), headers);
      const [status, html, cookie, location] = await this.step(form, raw, fileProblems, req);
      const sent = cookie ? { ...headers, 'Set-Cookie': cookie } : headers;
      return sendPage(res, status, html, location ? { ...sent, Location: location } : sent);
    }
    const fileView = () => this.fileView(form, raw);
    if (fileProblems.length) return sendPage(res, 400, formPage(form, raw, fileProblems, await fileView()), headers);
    let submitted: ResponseView;
    try {
      submitted = await this.responses.submit(publicId, answersFromFormPost(form.blocks, raw));
    } catch (err) {
      if (err instanceof ApiError && err.code === 'invalid_arguments')
        return sendPage(res, 400, formPage(form, raw, err.details ?? [], await fileView()), headers);
      if (err instanceof ApiError && err.code === 'form_not_accepting_responses')
        return sendPage(res, 409, notAcceptingPage(form.status), headers);
      throw err;
    }
    this.sendEnd(res, form, endOfSubmitted(form, submitted), headers);
  }

  /** The page that ends the form (issue 46): an ending with a redirect goes there (303), with the page as its body. */
  private sendEnd(res: Response, form: FormRecord, end: EndView, headers: Record<string, string>) {
    if (end.redirectUrl) return sendPage(res, 303, thankYouPage(form, end), { ...headers, Location: end.redirectUrl });
    sendPage(res, 200, thankYouPage(form, end), headers);
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
  private async step(
    form: FormRecord,
    raw: RawAnswers,
    fileProblems: ErrorDetail[],
    req: Request,
  ): Promise<[number, string, string?, string?]> {
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
    if (fileProblems.length) {
      // A file the post carried was refused (its type, its name): this page again, saying so.
      const r = route(form, state.a, state.h);
      return [400, await this.drawStep(form, state, current, r, fileProblems)];
    }
    if (tooLarge) {
      // Signed with the answers before this page's (so the next post fits), drawn with what was typed.
      const kept = { ...state, a: before };
      const r = route(form, state.a, state.h);
      return [400, await this.drawStep(form, kept, current, r, [tooLarge], undefined, state.a)];
    }

    if (action === 'save' && savesPartials(form)) {
      // Save and finish later: this page's answers kept unchecked (as Back keeps them), and the resume link.
      const saved = await this.savePartial(form, state, route(form, state.a, state.h), req);
      if (!saved.state.p) return [200, await this.drawStep(form, state, current, saved.r, [], saved.notice)];
      const link = `${this.config.publicUrl}/f/${form.publicId}?resume=${saved.state.p}`;
      return [200, savedPage(form, link, this.config.partialResponseRetentionDays), saved.cookie];
    }

    if (action === 'back' && state.s.length > 1) {
      state.s = state.s.slice(0, -1);
      const back = pages.find((p) => p.key === state.s[state.s.length - 1]) ?? pages[0];
      const saved = await this.savePartial(form, state, route(form, state.a, state.h), req);
      return [200, await this.drawStep(form, saved.state, back, saved.r, [], saved.notice), saved.cookie];
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
      const saved = await this.savePartial(form, state, r, req);
      return [200, await this.drawStep(form, saved.state, next, r, [], saved.notice), saved.cookie];
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
        if (await this.sessions.useNonce(`respondent:${state.n}`)) await this.finish(form, state, r);
      });
    } catch (err) {
      if (err instanceof ApiError && err.code === 'response_completed') return [200, alreadySubmittedPage(form)];
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
    // Submitted: this browser forgets the partial's secret.
    const forget = state.p ? resumeCookie(form.publicId, undefined, req.protocol === 'https') : undefined;
    const end = endView(form, r.stored, r.hidden);
    // An ending's redirect (issue 46): 303 to it, the ending's page as the body.
    if (end.redirectUrl) return [303, thankYouPage(form, end), forget, end.redirectUrl];
    return [200, thankYouPage(form, end), forget];
  }

  /** Stores the submission: the walk's partial completed when it saved one, else a new response. */
  private async finish(form: FormRecord, state: PageState, r: Route): Promise<void> {
    if (state.p && savesPartials(form)) {
      try {
        await this.partials.complete(form, { resumeSecret: state.p, answers: r.answers, hidden: state.h });
        return;
      } catch (err) {
        // A partial deleted meanwhile (retention) or unknown: the answers are submitted as a new response.
        if (!(err instanceof ApiError) || err.code !== 'not_found') throw err;
      }
    }
    await this.responses.submit(form.publicId, r.answers, state.h);
  }

  /**
   * With partial responses on, saves the walk so far (the valid answers on the pages visited, the
   * pages, the page now shown, the last in state.s) and keeps its resume secret in the state and the
   * cookie. A save the service refuses never stops the walk: the page says the answers were not
   * saved for later, and the person can still go on and submit.
   */
  private async savePartial(
    form: FormRecord,
    state: PageState,
    r: Route,
    req: Request,
  ): Promise<{ state: PageState; r: Route; cookie?: string; notice?: string }> {
    if (!savesPartials(form)) return { state, r };
    try {
      const saved = await this.partials.save(form, {
        resumeSecret: state.p,
        answers: partialAnswers(state, r),
        hidden: state.h,
        pagesReached: state.s,
        lastPage: state.s[state.s.length - 1],
        ip: req.ip,
      });
      const cookie = this.keepCookie(form, saved.resumeSecret, req);
      return { state: { ...state, p: saved.resumeSecret, i: saved.responseId }, r, cookie };
    } catch (err) {
      if (!(err instanceof ApiError) || err.status >= 500) throw err;
      const notice =
        err.code === 'response_completed'
          ? 'These answers were already submitted (from the link to finish later): what you send now is a new response.'
          : 'Your answers could not be saved for later. You can still go on and submit them.';
      return { state: { ...state, p: err.code === 'response_completed' ? undefined : state.p }, r, notice };
    }
  }

  /**
   * GET of a form that saves partials, with a resume link (?resume=) or this browser's cookie: the
   * walk where the person stopped, every answer and the hidden values fixed at the start in place
   * (the form as it is now: see resumedWalk). A completed response's secret shows only that it was
   * submitted; an unknown one (a guess, another form's, tampered, expired) the first page, fresh,
   * and is forgotten. Each attempt is a request of the per-IP budget, spent before the route runs.
   * Undefined when there is nothing to resume.
   */
  private async resume(form: FormRecord, req: Request): Promise<{ html: string; cookie: string } | undefined> {
    const { secret, fromLink } = resumeSecretOf(req.query, req.headers.cookie);
    if (!secret && !fromLink) return undefined;
    const secure = req.protocol === 'https';
    const forget = resumeCookie(form.publicId, undefined, secure);
    const found = secret ? await this.partials.resume(form.id, secret) : ({ kind: 'unknown' } as const);
    if (found.kind === 'completed') return { html: alreadySubmittedPage(form), cookie: forget };
    if (found.kind === 'unknown') {
      const state = this.newState(form, {}, hiddenFromQuery(form.hiddenFields, req.query));
      const r = route(form, state.a, state.h);
      const notice = fromLink
        ? 'This link to finish later does not open any answers (it may have expired): the form starts again here.'
        : undefined;
      return { html: await this.drawStep(form, state, r.onPath[0] ?? r.pages[0], r, [], notice), cookie: forget };
    }
    const w = resumedWalk(form, found.partial);
    const state: PageState = { ...this.newState(form, w.a, w.h), s: w.s, p: secret, i: found.partial.responseId };
    const html = await this.drawStep(form, state, w.page, w.r, [], 'Welcome back: your answers so far are filled in.');
    return { html, cookie: this.keepCookie(form, secret!, req) };
  }

  private keepCookie(form: FormRecord, secret: string, req: Request): string {
    return resumeCookie(form.publicId, secret, req.protocol === 'https', this.config.partialResponseRetentionDays);
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
    const files = await this.fileView(form, values, state.i);
    // Recall (issue 46): what the pages before this one answered and computed.
    const before = valuesBefore(form, r, page);
    const fill = (b: Block) => recallBlock(b, before.values);
    return stepPage(
      form,
      {
        start: page.start && fill(page.start),
        blocks: blocks.map(fill),
        all: page.blocks.map(fill),
        logic: recallLogic(pageLogic(page, r, before.variables), before.values),
        position,
        total: Math.max(position, r.onPath.length),
        state: signed,
        back: state.s.length > 1,
        last: !nextPage(page.key, r),
        notice,
        files,
        saves: savesPartials(form),
      },
      values,
      errors,
    );
  }

  /**
   * Reads a multipart post: its fields, and each file part for a file question of the form
   * streamed to storage (UploadsService.createFromStream, which stops at the block's limit: a 413
   * for the whole post), its upload id kept as the question's value. A file the block does not
   * take (type, name) is left out with a problem for the page; a part for anything else is read
   * and dropped.
   */
  private async receiveFiles(form: FormRecord, req: Request, problems: ErrorDetail[]): Promise<RawAnswers> {
    const fileBlocks = new Map(form.blocks.filter((b) => b.type === 'file_upload').map((b) => [b.id, b]));
    const plan = await this.workspaces.planOf(form.workspaceId);
    const files = [...fileBlocks.values()].reduce((n, b) => n + (b.maxFiles ?? 1), 0);
    const onFile = async (part: FilePart) => {
      const block = fileBlocks.get(part.field);
      if (!block) return void part.body.resume();
      try {
        const input = { workspaceId: form.workspaceId, plan, form, block: block.id };
        const { uploadId } = await this.uploads.createFromStream(
          { ...input, filename: part.filename, contentType: part.contentType || 'application/octet-stream' },
          part.body,
        );
        return uploadId;
      } catch (err) {
        if (!(err instanceof ApiError) || err.code !== 'invalid_arguments') throw err;
        part.body.resume();
        problems.push({ path: `/answers/${pointerSegment(block.id)}`, message: fileRefused(block, part.filename) });
        return undefined;
      }
    };
    // A post refused as a whole (too large, too many files, cut) leaves none of its files behind.
    return readMultipartPost(
      req.headers,
      req.body as Readable,
      { bytes: 200 * 1024, fields: 1000, files },
      onFile,
      (ids) => this.uploads.discard(ids),
    );
  }

  /** The files the values name (this form's, held by no response but this walk's partial) and each file question's limit. */
  private async fileView(form: FormRecord, values: RawAnswers, partialId?: string): Promise<FileView | undefined> {
    const fileBlocks = form.blocks.filter((b) => b.type === 'file_upload');
    if (!fileBlocks.length) return undefined;
    const plan = await this.workspaces.planOf(form.workspaceId);
    const ids = fileBlocks.flatMap((b) => [values[b.id] ?? []].flat()).filter((id) => UPLOAD_ID.test(id));
    return {
      kept: await this.pendingUploads(form.id, ids, partialId),
      limitMb: Object.fromEntries(fileBlocks.map((b) => [b.id, fileLimitBytes(b, plan) / MB])),
    };
  }

  /**
   * The names and sizes of the uploads among `ids` that belong to this form and no response holds
   * yet, or the walk's own partial holds (its id signed in the state): a walk's files, shown by the ids its posts carried (an id of another form, which a post
   * could name, shows nothing here and is refused by the submission's checks).
   */
  private async pendingUploads(formId: string, ids: string[], partialId?: string): Promise<FileView['kept']> {
    if (!ids.length) return new Map();
    const rows: Array<{ id: string; name: string; size: string }> = await currentManager(this.db).query(
      'SELECT id, name, size FROM uploads WHERE id = ANY($1::text[]) AND form_id = $2 AND (response_id IS NULL OR response_id = $3::uuid)',
      [ids, formId, partialId ?? null],
    );
    return new Map(rows.map((r) => [r.id, { name: r.name, size: Number(r.size) }]));
  }

  /**
   * The page's headers; with a file question, the page's script may also reach the storage's
   * upload origin (an S3 bucket takes the bytes straight from the browser).
   */
  private async headersFor(form: FormRecord): Promise<Record<string, string>> {
    const origins = await this.workspaces.embedOriginsOf(form.workspaceId);
    if (!form.blocks.some((b) => b.type === 'file_upload')) return pageHeaders(origins);
    return pageHeaders(origins, await this.uploadOrigin());
  }

  private uploadOriginOnce?: Promise<string>;
  /** The origin upload targets point to: signing one (no request is made) tells it, whichever store runs. */
  private uploadOrigin(): Promise<string> {
    this.uploadOriginOnce ??= this.storage
      .uploadTarget('origin/probe/upl_0', { size: 1, contentType: 'application/octet-stream', expiresAt: new Date() })
      .then((t) => new URL(t.url).origin);
    return this.uploadOriginOnce;
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

/** A file the block does not take, said to the person who chose it. */
function fileRefused(block: Block, filename: string): string {
  const name = filename.length > 80 ? `${filename.slice(0, 77)}…` : filename;
  return block.accept?.length
    ? `The file “${name}” is not a type this question takes (${block.accept.join(', ')}). Choose another file.`
    : `The file “${name}” could not be taken. Rename it or choose another file.`;
}

/** The page for a file over its question's limit (the post stops there: nothing of it is kept). */
function tooLargePage(form: FormRecord, message: string): string {
  return messagePage(
    'The file is too large',
    `${message} Go back, choose a smaller file, and send the form again. (“${form.title}”)`,
  );
}

/** The page for a post whose bytes stopped coming (UPLOAD_IDLE_TIMEOUT_MS): nothing of it is kept. */
function stalledPage(form: FormRecord): string {
  return messagePage(
    'The upload stopped',
    `No data arrived for a while, so nothing was kept. Go back and send the form again. (“${form.title}”)`,
  );
}

/** The answer to a post whose body is not read to the end: the connection closes after it. */
function closing(): Record<string, string> {
  return { Connection: 'close' };
}

/** Without the form's headers (an unknown form, say), no site may frame the page. */
function sendPage(res: Response, status: number, html: string, headers = pageHeaders([])) {
  res.status(status).headers(headers).type('text/html; charset=utf-8').send(html);
}
